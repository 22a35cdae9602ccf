// What a model builder works with: the weights, the config and the plan it
// fills, and the graph plumbing every builder shares (new tensors, nodes,
// size-dependent tables, the plan's results). The layers both families use
// are in layers.h, the polarity-attention core in polarity_core.h.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/calibration.h"
#include "engine/packed_weights.h"
#include "engine/plan.h"
#include "engine/precision.h"
#include "engine/weight_store.h"
#include "model/geometry.h"
#include "model/model_config.h"

namespace pola::models {

struct BuildContext {
  WeightStore &weights;
  PackedWeightCache &packed;
  const ModelConfig &cfg;
  Plan &plan;
  OpPrecisions precisions{}; // per op kind (engine/precision.h)
  // Only lay the graph out, to learn what the plan would allocate
  // (Model::run_memory): no op is created (make() gives null, which only the
  // nodes' never-run closures hold) and no table is computed.
  bool sizing_only = false;
  // Set while `pola quantize` calibrates: each linear layer that may run in
  // int8 records its input range (layers.cpp).
  CalibrationRecorder *calibration = nullptr;

  // An op (a oneDNN primitive wrapper) owned by the plan.
  template <class T, class... Args> T *make(Args &&...args) {
    if (sizing_only) return nullptr;
    auto p = std::make_shared<T>(std::forward<Args>(args)...);
    plan.owned.push_back(p);
    return p.get();
  }
  // A table of `floats` values that depends on the input size (resized
  // position tables, masks), made by `compute`: owned by the plan, so it goes
  // when the plan is evicted, and counted in its side_bytes.
  const float *size_table(int64_t floats, const std::function<std::vector<float>()> &compute);
  // Scratch an op takes from the threads' scratch caches while it runs, all
  // threads together: the plan's need is the largest of them, not their sum.
  void note_scratch_bytes(size_t bytes) { plan.scratch_bytes = std::max(plan.scratch_bytes, bytes); }
};

// The dtype of the tensors an op of precision `p` reads, and the precision a
// kernel keyed by `d` computes in (kernels/registry.h's naming rule).
// int8 GEMMs read f32 rows, which their own `.to_s8` node quantizes with the
// layer's scale (layers.cpp), so the tensors between ops stay f32 in int8 plans.
inline DType dtype_of(Precision p) { return p == Precision::bf16 ? DType::bf16 : DType::f32; }
inline Precision precision_of(DType d) {
  return d == DType::bf16 ? Precision::bf16 : d == DType::s8 ? Precision::int8 : Precision::fp32;
}

// A new dense rows x cols tensor of the plan's graph; `name` is unique.
TensorRef new_tensor(BuildContext &ctx, const std::string &name, int64_t rows, int64_t cols,
                     DType dtype = DType::f32);

// Adds node `name` reading `inputs` and writing `outputs`; `run` gets their
// views in that order. `precision` is what the node computes in.
void add_node(BuildContext &ctx, const std::string &name, std::vector<TensorRef> inputs,
              std::vector<TensorRef> outputs, NodeFn run, Precision precision = Precision::fp32);

// The stored (checkpoint) tensor `name` of a token grid (1, ckpt_h * ckpt_w, C),
// resized bilinearly to h x w when the run's grid differs (model/geometry.h).
const float *grid_table(BuildContext &ctx, const std::string &name, int64_t ckpt_h, int64_t ckpt_w, int64_t h,
                        int64_t w, int64_t channels);

// The last stage (0-based) the plan's outputs need: every stage when the
// pooled embedding or the logits are wanted, else the highest requested one.
size_t last_needed_stage(const PlanKey &key, size_t stages);

// Makes `tokens` the plan's stage `stage` result when the plan's key asks for it.
void add_stage_result(BuildContext &ctx, size_t stage, const TensorRef &tokens);

} // namespace pola::models
