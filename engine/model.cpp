#include "engine/model.h"

#include <omp.h>

#include <cstring>

#include "engine/dnnl_context.h"
#include "engine/omp_team.h"
#include "engine/models/builders.h"
#include "weights/error.h"
#include "weights/model_metadata.h"

namespace pola {

Model::Model(weights::ModelFile file, ModelConfig cfg, std::vector<std::string> class_names, int threads)
    : weights_(std::move(file)), cfg_(std::move(cfg)), class_names_(std::move(class_names)), threads_(threads) {}

std::unique_ptr<Model> Model::load(const std::string &path, const ModelOptions &options) {
  weights::ModelFile file = weights::ModelFile::open(path);
  ModelConfig cfg = weights::read_model_config(file);
  std::vector<std::string> class_names = weights::read_class_names(file, cfg);
  int threads = options.threads > 0 ? options.threads : omp_get_num_procs();
  std::unique_ptr<Model> m(new Model(std::move(file), std::move(cfg), std::move(class_names), threads));
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
}

Model::ArenaSizes Model::arena_sizes(int batch) {
  ScopedOmpThreads team(threads_);
  auto plan = acquire(batch);
  ArenaSizes sizes{plan->graph.planned_bytes(), plan->graph.tensor_bytes()};
  release(std::move(plan));
  return sizes;
}

} // namespace pola
