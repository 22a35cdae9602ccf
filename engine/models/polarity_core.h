// The polarity-attention block's core (SPEC section 3), shared by every
// family with "L" blocks: the linear-attention kernel, the depthwise-conv
// branch on v, and the gate.
#pragma once

#include <string>

#include "engine/models/build_context.h"

namespace pola::models {

// The core for `sequences` independent sequences of n_q query and n_k key
// tokens each (images, or Swin windows of side `grid`), q/g from one
// projection and k/v from another; writes out = (attn + dwc(v_full)) * g.
// `v_full` is v already at query resolution (after any interpolation).
struct PolarityCoreArgs {
  std::string prefix;  // e.g. "block1.0.attn"
  int64_t sequences = 1, n_q = 0, n_k = 0, grid_h = 0, grid_w = 0;
  // The key grid of the stored positional_encoding and the one of this run
  // (n_k = kv_h * kv_w); the encoding is resized when they differ.
  int64_t pe_h = 0, pe_w = 0, kv_h = 0, kv_w = 0;
  int heads = 0, head_dim = 0;
  TensorRef q, k, v, v_full, g, out;
};
// Returns the gated rows for the output projection: `out` itself, or (bf16
// GEMMs) a bf16 copy written by the gate node.
TensorRef add_polarity_core(BuildContext &ctx, const PolarityCoreArgs &a);

// Node `name`: out *= g (the un-activated gate of PolaFormer's attention).
// Returns the gated rows for the output projection: `out` itself, or (bf16
// GEMMs) a bf16 copy written by the same node.
TensorRef add_gate(BuildContext &ctx, const std::string &name, const TensorRef &out, const TensorRef &g);

} // namespace pola::models
