// The engine's C++ API: load a model file once, run it from any number of
// threads. Each run borrows a plan (graph + arena + primitives) built for its
// batch size; plans are built on first use and then reused.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/graph.h"
#include "engine/packed_weights.h"
#include "engine/plan.h"
#include "engine/precision.h"
#include "engine/weight_store.h"
#include "model/model_config.h"

namespace pola {

struct ModelOptions {
  int threads = 0; // worker threads per run; 0 = all available cores
  // By default an input holding NaN or Inf is refused, and so is a run whose
  // logits are not all finite (an answer of NaN is never returned as one).
  // True lets both through, for callers that handle them.
  bool allow_nonfinite = false;
  // fp32 (default: exact parity), bf16 (the GEMMs in bf16 with fp32
  // accumulation; refused without AVX512-BF16 or AMX-BF16) or automatic.
  PrecisionRequest precision = PrecisionRequest::fp32;
};

class Model {
 public:
  // Maps and validates `path` (format, config, class names, every tensor's
  // presence and shape), reading its metadata through weights/model_metadata
  // as every other reader of model files does. Throws pola::InputError naming
  // the file and the problem.
  static std::unique_ptr<Model> load(const std::string &path, const ModelOptions &options = {});

  const ModelConfig &config() const { return cfg_; }
  const std::map<std::string, std::string> &metadata() const { return weights_.file().metadata(); }
  // The file the model was loaded from (still mapped): its raw tensors, for
  // tools that read parameters the engine keeps only in transformed form.
  const weights::ModelFile &file() const { return weights_.file(); }
  const std::vector<std::string> &class_names() const { return class_names_; }
  int threads() const { return threads_; }
  // What the model runs at and why (the resolved --precision).
  const PrecisionChoice &precision() const { return precision_; }
  int64_t input_size() const; // floats per image: in_chans * img * img

  // logits[b, :] for `batch` images of input (batch, in_chans, img, img).
  // The observer, if given, sees every named node (dumps, profiles).
  void run(const float *input, int batch, float *logits, const NodeObserver *observer = nullptr);

  // The activation arena of the plan for `batch` images: its planned size
  // (tensors whose lifetimes do not overlap share memory) and the sum of
  // all its tensors (one buffer each).
  struct ArenaSizes { size_t planned_bytes = 0, tensor_bytes = 0; };
  ArenaSizes arena_sizes(int batch);
  // Bytes of the weights packed for oneDNN (bf16: half of fp32's).
  size_t packed_weight_bytes() const { return packed_.packed_bytes(); }

 private:
  Model(weights::ModelFile file, ModelConfig cfg, std::vector<std::string> class_names, int threads);
  void refuse_nonfinite_input(const float *input, int batch) const;
  void refuse_nonfinite_logits(const float *input, int batch, const float *logits) const;
  std::unique_ptr<Plan> acquire(int batch);
  void release(std::unique_ptr<Plan> plan);
  std::unique_ptr<Plan> build(int batch);

  WeightStore weights_;
  PackedWeightCache packed_;
  ModelConfig cfg_;
  std::vector<std::string> class_names_;
  int threads_;
  bool allow_nonfinite_ = false;
  PrecisionChoice precision_;
  std::mutex pool_mutex_;
  std::multimap<int, std::unique_ptr<Plan>> idle_plans_;
};

} // namespace pola
