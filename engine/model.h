// The engine's C++ API: load a model file once, run it from any number of
// threads. Each run borrows a plan (graph + arena + primitives) built for its
// input shape and outputs; plans are built on first use and then reused, and a
// bounded number of idle ones is kept (least recently used goes first).
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <functional>
#include <string>
#include <vector>

#include "engine/calibration.h"
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
  // `pola quantize`: run fp32 and record each int8-capable linear layer's
  // input range here (engine/calibration.h). Must outlive the model.
  CalibrationRecorder *calibration = nullptr;
  // Low-memory mode (edge devices): fp32 GEMMs and convolutions read their
  // weights straight from the mapped file instead of a packed copy, so resident
  // memory is about the file plus the arena; runs are slower where the packed
  // layout was faster. Depthwise, bf16 and int8 weights are still packed.
  bool low_memory = false;
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
  // The same for input (batch, in_chans, height, width): any size
  // check_input_size (model/geometry.h) accepts; others throw InputError.
  void run(const float *input, int batch, int64_t height, int64_t width, float *logits,
           const NodeObserver *observer = nullptr);

  // ---- Backbone features at any input size (dense prediction) ----
  // Stage i's output (0-based) for one image: the tokens after its last
  // block, as an NCHW plane (channels, grid_h, grid_w); no norm is applied.
  struct FeatureShape { int64_t channels = 0, height = 0, width = 0; };
  // Per stage, for an input of height x width (throws InputError if invalid).
  std::vector<FeatureShape> feature_shapes(int64_t height, int64_t width) const;
  int64_t pooled_size() const; // floats of the pooled embedding (before the head) per image
  // Computes only what is asked: stage_out[i] (num_stages() entries, each
  // NULL or batch x shape floats, NCHW) and, if not NULL, pooled (batch x
  // pooled_size()). Stages after the last one needed are not built, nor is the head.
  void features(const float *input, int batch, int64_t height, int64_t width, float *const *stage_out,
                float *pooled, const NodeObserver *observer = nullptr);
  // Any mix of the outputs above from one plan, so a caller wanting logits
  // and features pays for one pass: each pointer NULL (not computed) or room
  // for batch rows; stages holds num_stages() pointers or is NULL.
  struct Outputs {
    float *logits = nullptr;
    float *pooled = nullptr;
    float *const *stages = nullptr;
  };
  void run(const float *input, int batch, int64_t height, int64_t width, const Outputs &out,
           const NodeObserver *observer = nullptr);

  // Idle plans kept for reuse; beyond this the least recently used is freed.
  static constexpr size_t kIdlePlanCapacity = 4;
  // How the plan pool has served runs so far (an observable for tests and tools).
  struct PlanCacheStats { size_t hits = 0, misses = 0, evictions = 0, idle = 0; };
  PlanCacheStats plan_cache_stats();

  // ---- Memory: what a run needs, checked before anything is allocated ----
  // What a run allocates, in bytes: the plan's activation arena and what the
  // plan holds beside it (size-dependent tables) and the most scratch one of
  // its ops takes from the threads' scratch caches, together its working memory; and the run's inputs and outputs, which the
  // caller allocates. Found by laying the plan's graph out without creating
  // its ops or allocating anything. Throws InputError for a batch < 1 or a
  // size the model does not accept.
  struct RunMemory {
    size_t arena = 0, side = 0, scratch = 0, inputs = 0, outputs = 0;
    size_t working() const { return arena + side + scratch; }
    size_t total() const { return working() + inputs + outputs; }
  };
  RunMemory run_memory(const PlanKey &key);
  RunMemory run_memory(int batch, int64_t height, int64_t width);  // logits
  RunMemory run_memory(int batch);  // logits at the model's own size
  // Throws InputError ("a batch of 64 images of 4096x4096 needs 37.2 GiB
  // (...); 21.9 GiB is available (MemAvailable in /proc/meminfo)") unless the
  // run fits in the memory available (engine/memory_budget.h), counting
  // `held` bytes of its need as already allocated (the caller's buffers) and
  // a plan already built for the shape as allocated. For callers to ask
  // before allocating inputs and outputs; every run asks it again before
  // building a plan (its inputs and outputs held by then). Idle plans are
  // freed before a run is refused when that could make room.
  void check_memory(const PlanKey &key, size_t held = 0);
  void check_memory(int batch, int64_t height, int64_t width, size_t held = 0);  // logits

  // The activation arena of the plan for `batch` images: its planned size
  // (tensors whose lifetimes do not overlap share memory) and the sum of
  // all its tensors (one buffer each); and what the plan holds beside it.
  struct ArenaSizes { size_t planned_bytes = 0, tensor_bytes = 0, side_bytes = 0, scratch_bytes = 0; };
  ArenaSizes arena_sizes(int batch);
  ArenaSizes arena_sizes(int batch, int64_t height, int64_t width);
  // Bytes of the weights packed for oneDNN (bf16: half of fp32's).
  size_t packed_weight_bytes() const { return packed_.packed_bytes(); }

 private:
  Model(weights::ModelFile file, ModelConfig cfg, std::vector<std::string> class_names, int threads);
  void refuse_nonfinite_input(const float *input, int batch, int64_t height, int64_t width) const;
  void refuse_nonfinite_output(const float *input, int64_t input_floats, const float *out, int64_t rows,
                               int64_t cols, const char *what) const;
  // Runs the plan for `key` (checked: size, batch, finite input), then hands
  // it to `collect` before giving it back to the pool.
  void run_plan(const float *input, const PlanKey &key, const NodeObserver *observer,
                const std::function<void(const Plan &)> &collect);
  std::unique_ptr<Plan> acquire(const PlanKey &key);
  void release(std::unique_ptr<Plan> plan);
  // Checks the memory a plan needs (its caller's inputs and outputs held), then builds and allocates it.
  std::unique_ptr<Plan> build(const PlanKey &key);
  // The plan's graph for `key`, planned; with sizing_only nothing else (no
  // op, no table, no arena), else everything but the arena's allocation.
  std::unique_ptr<Plan> lay_out(const PlanKey &key, bool sizing_only);
  // Reserves what a run still has to allocate (check_memory's rule), or throws its refusal.
  MemoryReservation reserve_memory(const PlanKey &key, const RunMemory &need, size_t held);
  bool has_idle_plan(const PlanKey &key);
  size_t idle_plan_bytes();  // the working memory idle plans hold
  size_t drop_idle_plans();  // returns how many were freed

  WeightStore weights_;
  PackedWeightCache packed_;
  ModelConfig cfg_;
  std::vector<std::string> class_names_;
  int threads_;
  bool allow_nonfinite_ = false;
  PrecisionChoice precision_;
  CalibrationRecorder *calibration_ = nullptr; // ModelOptions::calibration
  std::mutex pool_mutex_;
  std::list<std::unique_ptr<Plan>> idle_plans_;  // most recently used first
  PlanCacheStats cache_stats_;
};

} // namespace pola
