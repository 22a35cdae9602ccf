// What a model builder works with: the weights, the config, and the plan it
// fills; plus the building blocks both families share (linear layers,
// LayerNorm, the polarity-attention block's core).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "engine/packed_weights.h"
#include "engine/ops/linear.h"
#include "engine/ops/patchify.h"
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

  template <class T, class... Args> T *make(Args &&...args) {
    if (sizing_only) return nullptr;
    auto p = std::make_shared<T>(std::forward<Args>(args)...);
    plan.keep_alive.push_back(p);
    return p.get();
  }
  // A table of `floats` values that depends on the input size (resized
  // position tables, masks), made by `compute`: owned by the plan, so it goes
  // when the plan is evicted, and counted in its side_bytes.
  const float *keep(int64_t floats, const std::function<std::vector<float>()> &compute);
  // Memory an op holds for the plan's lifetime beside the arena (per-thread chunks).
  void note_side_bytes(size_t bytes) { plan.side_bytes += bytes; }
};

// The stored (checkpoint) tensor `name` of a token grid (1, ckpt_h * ckpt_w, C),
// resized bilinearly to h x w when the run's grid differs (model/geometry.h).
const float *grid_table(BuildContext &ctx, const std::string &name, int64_t ckpt_h, int64_t ckpt_w, int64_t h,
                        int64_t w, int64_t channels);

// The last stage (0-based) the plan's outputs need: every stage when the
// pooled embedding or the logits are wanted, else the highest requested one.
size_t last_needed_stage(const PlanKey &key, size_t stages);

// Records `tokens` as stage `stage`'s output when the plan's key asks for it.
void keep_stage_output(BuildContext &ctx, size_t stage, const TensorView &tokens);

// The observer's logical shape of a token tensor: (batch, tokens, cols), or
// (batch, cols) for one row per image (pooled features, logits).
std::vector<int64_t> token_shape(const TensorView &t, int64_t batch);

// A new dense rows x cols tensor of the plan's graph; `name` is unique.
TensorView new_tensor(BuildContext &ctx, const std::string &name, int64_t rows, int64_t cols);

// Rows a GEMM reads, held in the precision it computes in, so that the node
// producing them (LayerNorm, a GEMM, a gather) writes them that way and no
// separate conversion runs: an fp32 tensor, or a bf16 one (a tensor of
// ceil(rows * cols / 2) floats holding the dense bf16 rows, ld == cols).
// Nodes writing bf16 rows show no output to observers (they read floats).
struct GemmRows {
  TensorView storage;
  int64_t rows = 0, cols = 0, ld = 0; // ld in values of `precision`
  Precision precision = Precision::fp32;
  bool bf16() const { return precision == Precision::bf16; }
  float *ptr() const { return storage.ptr(); } // fp32 rows
  uint16_t *bf16_ptr() const { return reinterpret_cast<uint16_t *>(storage.ptr()); }
};
// A new tensor `name` of rows x cols values in `precision`.
GemmRows new_gemm_rows(BuildContext &ctx, const std::string &name, int64_t rows, int64_t cols, Precision precision);
// An fp32 tensor seen as GEMM rows.
GemmRows fp32_rows(const TensorView &t);

// Adds node `name` with its edges; the second form shows `output` to observers.
void add_node(BuildContext &ctx, const std::string &name, Edges edges, std::function<void()> run);
void add_node(BuildContext &ctx, const std::string &name, Edges edges, std::function<void()> run,
              const TensorView &output);

// What a linear node does around its GEMM, named at the call site instead of
// three positional bools: dst = src W^T (+ b) (then GELU) (+ dst).
struct LinearEpilogue {
  bool bias = true;        // add `prefix.bias`
  bool gelu = false;       // exact GELU over the result (fp32 rows only)
  bool accumulate = false; // add into dst: a residual stream updated in place
  static LinearEpilogue with_bias() { return {}; }
  static LinearEpilogue without_bias() { return {false, false, false}; }
  static LinearEpilogue then_gelu() { return {true, true, false}; }
  static LinearEpilogue into_residual() { return {true, false, true}; }
};

// Adds node `name`: dst = src W^T as `epilogue` says, with the weights
// `prefix.weight` (out, in) and `prefix.bias`.
void add_linear(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorView &src,
                const TensorView &dst, LinearEpilogue epilogue = LinearEpilogue::with_bias());
// The same from rows already in the GEMM precision (else converted), into
// fp32 or (bf16 GEMMs only) bf16 rows.
void add_linear(BuildContext &ctx, const std::string &name, const std::string &prefix, const GemmRows &src,
                const GemmRows &dst, LinearEpilogue epilogue = LinearEpilogue::with_bias());

// As add_linear, with the weight rows [row0, row0 + rows) of a fused
// projection (e.g. the v part of qkvg), copied once at load.
void add_linear_rows(BuildContext &ctx, const std::string &name, const std::string &prefix,
                     int64_t full_out, const std::vector<std::pair<int64_t, int64_t>> &row_ranges,
                     const GemmRows &src, const TensorView &dst);

// Adds node `name`: a convolution whose kernel equals its stride (patch
// embedding, spatial reduction) with weights `prefix.weight` (out, in, p, p)
// and `prefix.bias`, computed as patch rows times the flattened weights.
// `src` is the image (first stage: the plan's NCHW input) or token rows
// (fp32 or bf16); the patches are gathered in the embedding precision.
void add_patch_conv(BuildContext &ctx, const std::string &name, const std::string &prefix,
                    const ops::PatchGrid &grid, const float *const *src_ptr, const GemmRows *src_rows,
                    const TensorView &dst);

// Adds node `name`: dst = LayerNorm(src) with `prefix.weight/bias`.
void add_layernorm(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorView &src,
                   const TensorView &dst, float eps, bool report_output);
// The same into GEMM rows (bf16 ones: the LayerNorm rounded, no output shown;
// fp32 ones: shown when report_output).
void add_layernorm(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorView &src,
                   const GemmRows &dst, float eps, bool report_output);

// The second half of every block: x += fc2(GELU(fc1(LayerNorm(x)))), with the
// weights `block.norm2.*`, `block.mlp.fc1.*`, `block.mlp.fc2.*`; the last node
// is named `block` (the block's output).
void add_mlp_residual(BuildContext &ctx, const std::string &block, const TensorView &x, int64_t hidden, float eps);

// The L block's core for `sequences` independent sequences of n_q query and
// n_k key tokens each (images, or Swin windows of side `grid`), q/g from one
// projection and k/v from another; writes out = (attn + dwc(v_full)) * g.
// `v_full` is v already at query resolution (after any interpolation).
// Returns the gated rows for the output projection: `out` itself, or (bf16
// GEMMs) a bf16 copy written by the gate node.
struct PolarityCoreArgs {
  std::string prefix;  // e.g. "block1.0.attn"
  int64_t sequences = 1, n_q = 0, n_k = 0, grid_h = 0, grid_w = 0;
  // The key grid of the stored positional_encoding and the one of this run
  // (n_k = kv_h * kv_w); the encoding is resized when they differ.
  int64_t pe_h = 0, pe_w = 0, kv_h = 0, kv_w = 0;
  int heads = 0, head_dim = 0;
  TensorView q, k, v, v_full, g, out;
};
GemmRows add_polarity_core(BuildContext &ctx, const PolarityCoreArgs &a);

// The end of both families: mean over each image's `tokens` rows (kept as the
// plan's pooled embedding when asked), the classifier `head.*`, and the plan's
// logits (when asked).
void add_pool_and_head(BuildContext &ctx, const TensorView &tokens);

} // namespace pola::models
