#include "engine/model.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/dnnl_context.h"
#include "engine/omp_team.h"
#include "engine/models/builders.h"
#include "weights/error.h"
#include "weights/finite_check.h"
#include "weights/model_metadata.h"
#include "model/geometry.h"

namespace pola {

namespace {
// Whether `pola quantize` made the file: it holds int8 weights.
bool holds_int8(const weights::ModelFile &file) {
  for (const weights::TensorView &t : file.tensors())
    if (t.dtype == weights::StoredDtype::i8) return true;
  return false;
}
} // namespace

Model::Model(weights::ModelFile file, ModelConfig cfg, std::vector<std::string> class_names, int threads)
    : weights_(std::move(file)), cfg_(std::move(cfg)), class_names_(std::move(class_names)), threads_(threads) {}

std::unique_ptr<Model> Model::load(const std::string &path, const ModelOptions &options) {
  resolve_precision(options.precision); // before the file: a refusal for the CPU costs nothing
  weights::ModelFile file = weights::ModelFile::open(path);
  const PrecisionChoice precision = resolve_precision(options.precision, holds_int8(file), path);
  ModelConfig cfg = weights::read_model_config(file);
  std::vector<std::string> class_names = weights::read_class_names(file, cfg);
  // 0: all cores, or OMP_NUM_THREADS where it is set (as OpenMP programs read it).
  int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  std::unique_ptr<Model> m(new Model(std::move(file), std::move(cfg), std::move(class_names), threads));
  m->allow_nonfinite_ = options.allow_nonfinite;
  m->precision_ = precision;
  if (options.calibration && precision.precision != Precision::fp32)
    throw InputError(path + ": calibration runs the model in fp32, not " + precision_name(precision.precision));
  m->calibration_ = options.calibration;
  m->packed_.set_plain_only(options.low_memory);
  // Building the batch-1 plan checks every tensor against the config; then
  // nothing may be left over. Its primitives are created for the model's team size.
  ScopedOmpThreads team(threads);
  PlanKey key;
  key.height = key.width = m->cfg_.img_size;
  auto plan = m->build(key);
  m->weights_.check_all_used();
  m->release(std::move(plan));
  // Packed copies made, the file's pages are not needed again (unless the
  // weights are read from the file itself: low-memory mode).
  if (!options.low_memory) m->weights_.release_file_pages();
  return m;
}

int64_t Model::input_size() const {
  return static_cast<int64_t>(cfg_.in_chans) * cfg_.img_size * cfg_.img_size;
}

namespace {

// "a batch of 64 images of 4096x4096": how refusals name a run.
std::string run_description(const PlanKey &key) {
  return "a batch of " + std::to_string(key.batch) + (key.batch == 1 ? " image of " : " images of ") +
         std::to_string(key.height) + "x" + std::to_string(key.width);
}

} // namespace

std::unique_ptr<Plan> Model::lay_out(const PlanKey &key, bool sizing_only) {
  auto plan = std::make_unique<Plan>();
  plan->key = key;
  plan->batch = key.batch;
  plan->threads = threads_;
  if (!sizing_only) plan->stream = dnnl::stream(cpu_engine());
  plan->graph.set_batch(key.batch);
  plan->input = plan->graph.external("input", key.batch, int64_t(cfg_.in_chans) * key.height * key.width);
  models::BuildContext ctx{weights_, packed_, cfg_, *plan};
  ctx.precisions = op_precisions(precision_.precision);
  ctx.calibration = calibration_;
  ctx.sizing_only = sizing_only;
  models::builder_for(cfg_.family)(ctx);
  plan->graph.plan();
  return plan;
}

Model::RunMemory Model::run_memory(const PlanKey &key) {
  if (key.batch < 1) throw InputError("batch must be >= 1, got " + std::to_string(key.batch));
  check_input_size(cfg_, key.height, key.width, "the input");
  const ModelGeometry geometry = model_geometry(cfg_, key.height, key.width);
  // The inputs bound every activation's size from below; beyond this the
  // graph's sizes could overflow, and no machine has the memory anyway.
  const double input_bytes = double(key.batch) * cfg_.in_chans * double(key.height) * double(key.width) * sizeof(float);
  if (input_bytes > double(int64_t{1} << 50))
    throw InputError(run_description(key) + " needs more than " + format_bytes(input_bytes) +
                     " (its inputs alone); " + format_bytes(double(available_memory().bytes)) + " is available");
  RunMemory m;
  const size_t batch = static_cast<size_t>(key.batch);
  m.inputs = static_cast<size_t>(input_bytes);
  if (key.logits) m.outputs += batch * cfg_.num_classes * sizeof(float);
  if (key.pooled) m.outputs += batch * static_cast<size_t>(pooled_size()) * sizeof(float);
  for (size_t i = 0; i < geometry.stages.size(); ++i)
    if (key.stages & (1u << i)) {
      const StageGeometry &st = geometry.stages[i];
      m.outputs += batch * static_cast<size_t>(st.channels * st.tokens) * sizeof(float);
    }
  const auto plan = lay_out(key, true);
  m.arena = plan->graph.planned_bytes();
  m.side = plan->side_bytes;
  m.scratch = plan->scratch_bytes;
  // Activation sizes come from the file's config, not from its tensors (Swin
  // windows of one token need almost no weights for 2^30 tokens): refuse
  // absurd ones whatever the machine. The released models need under 100 MB
  // per image at their own size; the limit grows with the pixels a run asks for.
  constexpr size_t kMaxArenaBytesPerImage = size_t{2} << 30;
  const double pixels_ratio = std::max(1.0, double(key.height) * double(key.width) /
                                                (double(cfg_.img_size) * double(cfg_.img_size)));
  const double limit = double(kMaxArenaBytesPerImage) * pixels_ratio;
  if (double(m.arena) / double(key.batch) > limit)
    throw InputError(weights_.file().path() + ": the model config needs " + std::to_string(m.arena >> 20) +
                     " MB of activations for " + std::to_string(key.batch) + " image(s) of " +
                     std::to_string(key.height) + "x" + std::to_string(key.width) + ", more than the " +
                     std::to_string(static_cast<size_t>(limit) >> 20) + " MB per image this engine allows");
  return m;
}

Model::RunMemory Model::run_memory(int batch, int64_t height, int64_t width) {
  PlanKey key;
  key.batch = batch;
  key.height = height;
  key.width = width;
  return run_memory(key);
}

Model::RunMemory Model::run_memory(int batch) { return run_memory(batch, cfg_.img_size, cfg_.img_size); }

MemoryReservation Model::reserve_memory(const PlanKey &key, const RunMemory &need, size_t held) {
  held = std::min(held, need.total());
  const size_t to_allocate = need.total() - held;
  AvailableMemory available;
  if (auto r = MemoryReservation::try_reserve(to_allocate, available)) return std::move(*r);
  // Idle plans are only a cache: when freeing them could make room, free
  // them and look again before refusing (a hopeless run evicts nothing).
  if (to_allocate - available.bytes <= idle_plan_bytes() && drop_idle_plans() > 0)
    if (auto r = MemoryReservation::try_reserve(to_allocate, available)) return std::move(*r);
  const size_t io = need.inputs + need.outputs;
  std::string allocated;
  if (held == io) allocated = ", already allocated";
  else if (held > 0) allocated = "; " + format_bytes(double(held)) + " of it already allocated";
  throw InputError(run_description(key) + " needs " + format_bytes(double(need.total())) +
                   " (the plan's working memory " + format_bytes(double(need.working())) +
                   " plus inputs and outputs " + format_bytes(double(io)) + allocated + "); " +
                   format_bytes(double(available.bytes)) + " is available (" + available.source + ")");
}

void Model::check_memory(const PlanKey &key, size_t held) {
  const RunMemory need = run_memory(key);
  // A plan built for this shape already holds its working memory.
  if (has_idle_plan(key)) held += need.working();
  reserve_memory(key, need, held);  // released at once: the caller allocates next, and its run checks again
}

void Model::check_memory(int batch, int64_t height, int64_t width, size_t held) {
  PlanKey key;
  key.batch = batch;
  key.height = height;
  key.width = width;
  check_memory(key, held);
}

std::unique_ptr<Plan> Model::build(const PlanKey &key) {
  const RunMemory need = run_memory(key);
  // The caller's inputs and outputs exist by now: only the working memory is new.
  MemoryReservation reservation = reserve_memory(key, need, need.inputs + need.outputs);
  try {
    auto plan = lay_out(key, false);
    plan->graph.allocate();
    plan->reservation = std::move(reservation);
    return plan;
  } catch (const std::bad_alloc &) {
    // Another process took the memory between the check and the allocation:
    // not the input's fault, and not worth a crash.
    throw OutOfMemory("out of memory: allocating the plan's " + format_bytes(double(need.working())) +
                      " of working memory for " + run_description(key) +
                      " failed after the check had found it available (other processes may have taken it since)");
  }
}

bool Model::has_idle_plan(const PlanKey &key) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  for (const auto &p : idle_plans_)
    if (p->key == key) return true;
  return false;
}

size_t Model::idle_plan_bytes() {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  size_t bytes = 0;
  for (const auto &p : idle_plans_) bytes += p->graph.planned_bytes() + p->side_bytes;
  return bytes;
}

size_t Model::drop_idle_plans() {
  std::list<std::unique_ptr<Plan>> dropped;  // freed outside the lock
  std::lock_guard<std::mutex> lock(pool_mutex_);
  dropped.swap(idle_plans_);
  cache_stats_.evictions += dropped.size();
  return dropped.size();
}

std::unique_ptr<Plan> Model::acquire(const PlanKey &key) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    for (auto it = idle_plans_.begin(); it != idle_plans_.end(); ++it)
      if ((*it)->key == key) {
        auto plan = std::move(*it);
        idle_plans_.erase(it);
        ++cache_stats_.hits;
        return plan;
      }
    ++cache_stats_.misses;
  }
  return build(key);
}

void Model::release(std::unique_ptr<Plan> plan) {
  // After its first run the arena's pages are resident, so the system's own
  // figures count them (a plan never run never makes them resident).
  plan->reservation.release();
  std::unique_ptr<Plan> evicted;  // freed outside the lock
  std::lock_guard<std::mutex> lock(pool_mutex_);
  idle_plans_.push_front(std::move(plan));
  if (idle_plans_.size() > kIdlePlanCapacity) {
    evicted = std::move(idle_plans_.back());
    idle_plans_.pop_back();
    ++cache_stats_.evictions;
  }
}

Model::PlanCacheStats Model::plan_cache_stats() {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  PlanCacheStats s = cache_stats_;
  s.idle = idle_plans_.size();
  return s;
}

void Model::run_plan(const float *input, const PlanKey &key, const NodeObserver *observer,
                     const std::function<void(const Plan &)> &collect) {
  if (key.batch < 1) throw InputError("batch must be >= 1, got " + std::to_string(key.batch));
  check_input_size(cfg_, key.height, key.width, "the input");
  if (!allow_nonfinite_) refuse_nonfinite_input(input, key.batch, key.height, key.width);
  // Set before acquire(): a plan built here creates its oneDNN primitives for
  // this team size, and they keep it.
  ScopedOmpThreads team(threads_);
  auto plan = acquire(key);
  struct Return {  // give the plan back even if a node throws
    Model *m; std::unique_ptr<Plan> &p;
    ~Return() { m->release(std::move(p)); }
  } give_back{this, plan};
  plan->graph.bind(plan->input, input);
  plan->graph.run(observer);
  plan->stream.wait();
  collect(*plan);
}

void Model::run(const float *input, int batch, float *logits, const NodeObserver *observer) {
  run(input, batch, cfg_.img_size, cfg_.img_size, logits, observer);
}

void Model::run(const float *input, int batch, int64_t height, int64_t width, float *logits,
                const NodeObserver *observer) {
  Outputs out;
  out.logits = logits;
  run(input, batch, height, width, out, observer);
}

std::vector<Model::FeatureShape> Model::feature_shapes(int64_t height, int64_t width) const {
  check_input_size(cfg_, height, width, "the input");
  std::vector<FeatureShape> shapes;
  for (const StageGeometry &st : model_geometry(cfg_, height, width).stages)
    shapes.push_back({st.channels, st.res_h, st.res_w});
  return shapes;
}

int64_t Model::pooled_size() const { return model_geometry(cfg_).pooled_width; }

void Model::features(const float *input, int batch, int64_t height, int64_t width, float *const *stage_out,
                     float *pooled, const NodeObserver *observer) {
  bool any_stage = false;
  for (size_t i = 0; stage_out && i < cfg_.num_stages(); ++i) any_stage = any_stage || stage_out[i];
  if (!any_stage && !pooled) throw InputError("features: no stage and no pooled output asked for");
  Outputs out;
  out.pooled = pooled;
  out.stages = stage_out;
  run(input, batch, height, width, out, observer);
}

void Model::run(const float *input, int batch, int64_t height, int64_t width, const Outputs &out,
                const NodeObserver *observer) {
  PlanKey key;
  key.batch = batch;
  key.height = height;
  key.width = width;
  key.logits = out.logits != nullptr;
  key.pooled = out.pooled != nullptr;
  for (size_t i = 0; i < cfg_.num_stages(); ++i)
    if (out.stages && out.stages[i]) key.stages |= 1u << i;
  if (key.stages == 0 && !key.pooled && !key.logits) throw InputError("no output asked for");
  const std::vector<FeatureShape> shapes = feature_shapes(height, width);
  run_plan(input, key, observer, [&](const Plan &plan) {
    if (key.logits)
      std::memcpy(out.logits, plan.graph.result(plan.logits).f32(), sizeof(float) * batch * cfg_.num_classes);
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (!(key.stages & (1u << i))) continue;
      // Tokens (b, y*w + x, c) -> planes (b, c, y, x).
      const TensorView t = plan.graph.result(plan.stage_tokens[i]);
      const int64_t n = shapes[i].height * shapes[i].width, c = shapes[i].channels;
      float *dst = out.stages[i];
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t tok = 0; tok < n; ++tok) {
          const float *row = t.f32() + (b * n + tok) * t.ld();
          for (int64_t ch = 0; ch < c; ++ch) dst[(b * c + ch) * n + tok] = row[ch];
        }
    }
    if (key.pooled) {
      const TensorView p = plan.graph.result(plan.pooled);
      for (int64_t b = 0; b < batch; ++b)
        std::memcpy(out.pooled + b * pooled_size(), p.f32() + b * p.ld(), sizeof(float) * pooled_size());
    }
  });
  if (allow_nonfinite_) return;
  const int64_t input_floats = int64_t(batch) * cfg_.in_chans * height * width;
  if (key.logits) refuse_nonfinite_output(input, input_floats, out.logits, batch, cfg_.num_classes, "logits");
  for (size_t i = 0; i < shapes.size(); ++i)
    if (key.stages & (1u << i))
      refuse_nonfinite_output(input, input_floats, out.stages[i], batch,
                              shapes[i].channels * shapes[i].height * shapes[i].width,
                              ("stage " + std::to_string(i + 1) + " features").c_str());
  if (key.pooled) refuse_nonfinite_output(input, input_floats, out.pooled, batch, pooled_size(), "pooled embedding");
}

void Model::refuse_nonfinite_input(const float *input, int batch, int64_t height, int64_t width) const {
  const int64_t plane = height * width, per_image = int64_t(cfg_.in_chans) * plane;
  const weights::NonFinite bad = weights::find_nonfinite(input, size_t(batch) * per_image);
  if (bad.count == 0) return;
  const int64_t i = int64_t(bad.first), b = i / per_image, c = i % per_image / plane, yx = i % plane;
  throw InputError("the input holds " + weights::describe_nonfinite(bad, input) + " = image " + std::to_string(b) +
                   ", channel " + std::to_string(c) + ", row " + std::to_string(yx / width) + ", column " +
                   std::to_string(yx % width) + "; refused (allow non-finite inputs to run it anyway)");
}

void Model::refuse_nonfinite_output(const float *input, int64_t input_floats, const float *out, int64_t rows,
                                    int64_t cols, const char *what) const {
  const weights::NonFinite bad = weights::find_nonfinite(out, size_t(rows * cols));
  if (bad.count == 0) return;
  // Finite weights (checked at load) and finite inputs (checked above) can
  // still overflow float32 when either is extreme: say how large the input was.
  float largest = 0;
  for (int64_t i = 0; i < input_floats; ++i) largest = std::max(largest, std::fabs(input[i]));
  const bool logits = std::string(what) == "logits";
  throw InputError(std::string("the model's ") + what + " hold " + weights::describe_nonfinite(bad, out) +
                   " = image " + std::to_string(bad.first / cols) + (logits ? ", class " : ", value ") +
                   std::to_string(bad.first % cols) + ", from finite inputs (largest magnitude " +
                   std::to_string(largest) + ") and finite weights: their values overflow float32 in this model");
}

Model::ArenaSizes Model::arena_sizes(int batch) { return arena_sizes(batch, cfg_.img_size, cfg_.img_size); }

Model::ArenaSizes Model::arena_sizes(int batch, int64_t height, int64_t width) {
  check_input_size(cfg_, height, width, "the input");
  ScopedOmpThreads team(threads_);
  PlanKey key;
  key.batch = batch;
  key.height = height;
  key.width = width;
  auto plan = acquire(key);
  ArenaSizes sizes{plan->graph.planned_bytes(), plan->graph.tensor_bytes(), plan->side_bytes, plan->scratch_bytes};
  release(std::move(plan));
  return sizes;
}

} // namespace pola
