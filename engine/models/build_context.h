// What a model builder works with: the weights, the config, and the plan it
// fills; plus the building blocks both families share (linear layers,
// LayerNorm, the polarity-attention block's core).
#pragma once

#include <memory>
#include <string>

#include "engine/packed_weights.h"
#include "engine/ops/linear.h"
#include "engine/ops/patchify.h"
#include "engine/plan.h"
#include "engine/weight_store.h"
#include "model/geometry.h"
#include "model/model_config.h"

namespace pola::models {

struct BuildContext {
  WeightStore &weights;
  PackedWeightCache &packed;
  const ModelConfig &cfg;
  Plan &plan;

  template <class T, class... Args> T *make(Args &&...args) {
    auto p = std::make_shared<T>(std::forward<Args>(args)...);
    plan.keep_alive.push_back(p);
    return p.get();
  }
};

// A token tensor in the arena: `rows` rows of `cols` floats, row stride `ld`.
struct Rows {
  Slot *slot = nullptr;
  size_t offset = 0;
  int64_t rows = 0, cols = 0, ld = 0;
  float *ptr() const { return slot->ptr + offset; }
  Rows columns(int64_t first, int64_t count) const {
    return Rows{slot, offset + static_cast<size_t>(first), rows, count, ld};
  }
};

// A dense rows x cols tensor in slot `name` (grown to fit).
Rows reserve_rows(BuildContext &ctx, const std::string &name, int64_t rows, int64_t cols);

// The view the graph reports for a node's output, shaped (batch, tokens, cols).
TensorView2D token_view(const Rows &r, int64_t batch);

// Adds node `name`: dst = src W^T + b (+ GELU) (+ dst if accumulate), with the
// weights `prefix.weight` (out, in) and `prefix.bias` (when has_bias).
void add_linear(BuildContext &ctx, const std::string &name, const std::string &prefix, const Rows &src,
                const Rows &dst, bool has_bias, bool gelu, bool accumulate);

// As add_linear, with the weight rows [row0, row0 + rows) of a fused
// projection (e.g. the v part of qkvg), copied once at load.
void add_linear_rows(BuildContext &ctx, const std::string &name, const std::string &prefix,
                     int64_t full_out, const std::vector<std::pair<int64_t, int64_t>> &row_ranges,
                     const Rows &src, const Rows &dst);

// Adds node `name`: a convolution whose kernel equals its stride (patch
// embedding, spatial reduction) with weights `prefix.weight` (out, in, p, p)
// and `prefix.bias`, computed as patch rows times the flattened weights.
// `src` is the image (first stage: the plan's NCHW input) or token rows.
void add_patch_conv(BuildContext &ctx, const std::string &name, const std::string &prefix,
                    const ops::PatchGrid &grid, const float *const *src_ptr, const Rows *src_rows,
                    const Rows &dst);

// Adds node `name`: dst = LayerNorm(src) with `prefix.weight/bias`.
void add_layernorm(BuildContext &ctx, const std::string &name, const std::string &prefix, const Rows &src,
                   const Rows &dst, float eps, bool report_output);

// The second half of every block: x += fc2(GELU(fc1(LayerNorm(x)))), with the
// weights `block.norm2.*`, `block.mlp.fc1.*`, `block.mlp.fc2.*`; the last node
// is named `block` (the block's output). `xn` is scratch of x's shape.
void add_mlp_residual(BuildContext &ctx, const std::string &block, const Rows &x, const Rows &xn,
                      int64_t hidden, float eps);

// The L block's core for `sequences` independent sequences of n_q query and
// n_k key tokens each (images, or Swin windows of side `grid`), q/g from one
// projection and k/v from another; writes out = (attn + dwc(v_full)) * g.
// `v_full` is v already at query resolution (after any interpolation).
struct PolarityCoreArgs {
  std::string prefix;  // e.g. "block1.0.attn"
  int64_t sequences = 1, n_q = 0, n_k = 0, grid_h = 0, grid_w = 0;
  int heads = 0, head_dim = 0;
  Rows q, k, v, v_full, g, out;
};
void add_polarity_core(BuildContext &ctx, const PolarityCoreArgs &a);

} // namespace pola::models
