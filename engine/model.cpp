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

namespace pola {

Model::Model(weights::ModelFile file, ModelConfig cfg, std::vector<std::string> class_names, int threads)
    : weights_(std::move(file)), cfg_(std::move(cfg)), class_names_(std::move(class_names)), threads_(threads) {}

std::unique_ptr<Model> Model::load(const std::string &path, const ModelOptions &options) {
  const PrecisionChoice precision = resolve_precision(options.precision); // before the file: a refusal costs nothing
  weights::ModelFile file = weights::ModelFile::open(path);
  ModelConfig cfg = weights::read_model_config(file);
  std::vector<std::string> class_names = weights::read_class_names(file, cfg);
  int threads = options.threads > 0 ? options.threads : omp_get_num_procs();
  std::unique_ptr<Model> m(new Model(std::move(file), std::move(cfg), std::move(class_names), threads));
  m->allow_nonfinite_ = options.allow_nonfinite;
  m->precision_ = precision;
  // Building the batch-1 plan checks every tensor against the config; then
  // nothing may be left over. Its primitives are created for the model's team size.
  ScopedOmpThreads team(threads);
  auto plan = m->build(1);
  m->weights_.check_all_used();
  m->release(std::move(plan));
  m->weights_.release_file_pages();
  return m;
}

int64_t Model::input_size() const {
  return static_cast<int64_t>(cfg_.in_chans) * cfg_.img_size * cfg_.img_size;
}

std::unique_ptr<Plan> Model::build(int batch) {
  auto plan = std::make_unique<Plan>();
  plan->batch = batch;
  plan->threads = threads_;
  plan->stream = dnnl::stream(cpu_engine());
  models::BuildContext ctx{weights_, packed_, cfg_, *plan};
  ctx.precisions.gemm = precision_.precision;
  if (cfg_.family == Family::pvt) models::build_pvt(ctx);
  else models::build_swin(ctx);
  // Activation sizes come from the file's config, not from its tensors (Swin
  // windows of one token need almost no weights for 2^30 tokens): refuse
  // absurd ones before allocating. The released models need under 100 MB per image.
  constexpr size_t kMaxArenaBytesPerImage = size_t{2} << 30;
  plan->graph.plan();
  const size_t planned = plan->graph.planned_bytes();
  if (planned / static_cast<size_t>(batch) > kMaxArenaBytesPerImage)
    throw InputError(weights_.file().path() + ": the model config needs " + std::to_string(planned >> 20) +
                     " MB of activations for " + std::to_string(batch) + " image(s), more than the " +
                     std::to_string(kMaxArenaBytesPerImage >> 20) + " MB per image this engine allows");
  plan->graph.allocate();
  return plan;
}

std::unique_ptr<Plan> Model::acquire(int batch) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    auto it = idle_plans_.find(batch);
    if (it != idle_plans_.end()) {
      auto plan = std::move(it->second);
      idle_plans_.erase(it);
      return plan;
    }
  }
  return build(batch);
}

void Model::release(std::unique_ptr<Plan> plan) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  int b = plan->batch;
  idle_plans_.emplace(b, std::move(plan));
}

void Model::run(const float *input, int batch, float *logits, const NodeObserver *observer) {
  if (batch < 1) throw InputError("batch must be >= 1, got " + std::to_string(batch));
  if (!allow_nonfinite_) refuse_nonfinite_input(input, batch);
  // Set before acquire(): a plan built here creates its oneDNN primitives for
  // this team size, and they keep it.
  ScopedOmpThreads team(threads_);
  auto plan = acquire(batch);
  struct Return {  // give the plan back even if a node throws
    Model *m; std::unique_ptr<Plan> &p;
    ~Return() { m->release(std::move(p)); }
  } give_back{this, plan};
  plan->input = input;
  plan->graph.run(observer);
  plan->stream.wait();
  std::memcpy(logits, plan->logits.ptr(), sizeof(float) * batch * cfg_.num_classes);
  if (!allow_nonfinite_) refuse_nonfinite_logits(input, batch, logits);
}

void Model::refuse_nonfinite_input(const float *input, int batch) const {
  const int64_t per_image = input_size(), plane = int64_t(cfg_.img_size) * cfg_.img_size;
  const weights::NonFinite bad = weights::find_nonfinite(input, size_t(batch) * per_image);
  if (bad.count == 0) return;
  const int64_t i = int64_t(bad.first), b = i / per_image, c = i % per_image / plane, yx = i % plane;
  throw InputError("the input holds " + weights::describe_nonfinite(bad, input) + " = image " + std::to_string(b) +
                   ", channel " + std::to_string(c) + ", row " + std::to_string(yx / cfg_.img_size) + ", column " +
                   std::to_string(yx % cfg_.img_size) + "; refused (allow non-finite inputs to run it anyway)");
}

void Model::refuse_nonfinite_logits(const float *input, int batch, const float *logits) const {
  const weights::NonFinite bad = weights::find_nonfinite(logits, size_t(batch) * cfg_.num_classes);
  if (bad.count == 0) return;
  // Finite weights (checked at load) and finite inputs (checked above) can
  // still overflow float32 when either is extreme: say how large the input was.
  float largest = 0;
  for (int64_t i = 0; i < int64_t(batch) * input_size(); ++i) largest = std::max(largest, std::fabs(input[i]));
  throw InputError("the model's logits hold " + weights::describe_nonfinite(bad, logits) + " = image " +
                   std::to_string(bad.first / cfg_.num_classes) + ", class " +
                   std::to_string(bad.first % cfg_.num_classes) + ", from finite inputs (largest magnitude " +
                   std::to_string(largest) + ") and finite weights: their values overflow float32 in this model");
}

Model::ArenaSizes Model::arena_sizes(int batch) {
  ScopedOmpThreads team(threads_);
  auto plan = acquire(batch);
  ArenaSizes sizes{plan->graph.planned_bytes(), plan->graph.tensor_bytes()};
  release(std::move(plan));
  return sizes;
}

} // namespace pola
