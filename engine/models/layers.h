// The layers both families build from: linear layers, patch convolutions,
// their bf16 sources, LayerNorm, the MLP half of a block, the pooled
// classifier head. Each adds its nodes to the plan's graph with the tensors
// they read and write; a tensor's dtype says how it is held (bf16 rows feed
// bf16 GEMMs directly).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/models/build_context.h"
#include "engine/ops/patchify.h"

namespace pola::models {

// What a linear node does around its GEMM, named at the call site instead of
// three positional bools: dst = src W^T (+ b) (then GELU) (+ dst).
struct LinearEpilogue {
  bool bias = true;        // add `prefix.bias`
  bool gelu = false;       // exact GELU over the result (f32 dst only)
  bool accumulate = false; // add into dst: a residual stream updated in place
  static LinearEpilogue with_bias() { return {}; }
  static LinearEpilogue without_bias() { return {false, false, false}; }
  static LinearEpilogue then_gelu() { return {true, true, false}; }
  static LinearEpilogue into_residual() { return {true, false, true}; }
};

// The source rows of a GEMM or convolution computed in `precision`: `src`
// itself when it is held so, or a bf16 copy of f32 rows (node `name.to_bf16`).
TensorRef gemm_source(BuildContext &ctx, const std::string &name, const TensorRef &src, Precision precision);

// Adds node `name`: dst = src W^T as `epilogue` says, with the weights
// `prefix.weight` (out, in), or (out, in, 1, 1) for a 1x1 convolution, and
// `prefix.bias`, in the plan's GEMM precision.
// src may be f32 or already in the GEMM's dtype (else a `name.to_bf16` node
// converts it); dst is f32, or bf16 for a bf16 GEMM whose result feeds another.
void add_linear(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorRef &src,
                const TensorRef &dst, LinearEpilogue epilogue = LinearEpilogue::with_bias());

// As add_linear, with the weight rows [row0, row0 + rows) of a fused
// projection (e.g. the v part of qkvg), copied once at load.
void add_linear_rows(BuildContext &ctx, const std::string &name, const std::string &prefix, int64_t full_out,
                     const std::vector<std::pair<int64_t, int64_t>> &row_ranges, const TensorRef &src,
                     const TensorRef &dst);

// Adds node `name`: dst += (src W^T + b) * s, with s the per-output-channel
// tensor `scale` (layer scale) of `scale_shape` folded into the weights once
// at load. Weights as add_linear's.
void add_linear_scaled_into(BuildContext &ctx, const std::string &name, const std::string &prefix,
                            const std::string &scale, const std::vector<int64_t> &scale_shape, const TensorRef &src,
                            const TensorRef &dst);

// Adds node `name`: a convolution whose kernel equals its stride (patch
// embedding, spatial reduction) with weights `prefix.weight` (out, in, p, p)
// and `prefix.bias`, computed as patch rows times the flattened weights.
// `src` is the image batch (the plan's input, NCHW) or token rows (f32 or
// bf16); the patches are gathered in the embedding precision.
void add_patch_conv(BuildContext &ctx, const std::string &name, const std::string &prefix,
                    const ops::PatchGrid &grid, const TensorRef &src, const TensorRef &dst);

// Adds node `name`: dst = LayerNorm(src) with `prefix.weight/bias`; a bf16
// dst holds the result rounded for the bf16 GEMM that reads it.
void add_layernorm(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorRef &src,
                   const TensorRef &dst, float eps);

// The second half of every block: x += fc2(GELU(fc1(LayerNorm(x)))), with the
// weights `block.norm2.*`, `block.mlp.fc1.*`, `block.mlp.fc2.*`; the last node
// is named `block` (the block's output).
void add_mlp_residual(BuildContext &ctx, const std::string &block, const TensorRef &x, int64_t hidden, float eps);

// The end of both families: mean over each image's `tokens` rows (the plan's
// pooled result when asked), the classifier `head.*`, and the plan's logits
// (when asked).
void add_pool_and_head(BuildContext &ctx, const TensorRef &tokens);

} // namespace pola::models
