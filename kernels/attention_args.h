// Arguments of the two attention kernels (polarity, Swin window). The same
// struct serves every dtype and ISA of an op; the registry's fits()
// predicates read only the shape fields.
#pragma once

#include <cstdint>

namespace pola::kernels {

// The polarity core's feature map phi applied to x' = x * inv_scale, split
// by sign: phi(x') = [f(relu(x')), f(relu(-x'))] per channel, f(0) = 0.
// A parameter of the core, so that other maps with the same sign split can
// be added as new kinds. A kernel refuses (throws std::invalid_argument) a
// kind it does not know, and the registry resolves no kernel for it.
enum class FeatureKind {
  abs_pow = 0, // f(m) = m^p, p = power[channel] (PolaFormer); 0 where m < FLT_MIN
  // PolaFormer++ (SPEC-polaformerpp 2.7): keys psi = exp([k+, k-]) - 1 with
  // no parameter; queries get one map per path, each with its own per-head
  // weights over the 2d features: phi_same = exp([q+, q-] * sigma_same) - 1,
  // phi_opp = exp([q-, q+] * sigma_opp) - 1. inv_scale and pos_enc are unused.
  exp_sigmoid = 1,
};
struct FeatureMap {
  FeatureKind kind = FeatureKind::abs_pow;
  const float *power = nullptr; // abs_pow: (heads*head_dim) exponents, 1 + alpha * sigmoid(power_param)
  // exp_sigmoid: (heads * 2*head_dim) each, sigmoid(s1) and sigmoid(s2); head
  // h's 2d weights multiply the feature vector laid out as the path's
  // concatenation ([q+, q-] for same, [q-, q+] for opp).
  const float *sigma_same = nullptr, *sigma_opp = nullptr;
};
// Whether the kernels know the map's kind.
inline bool known_feature_map(const FeatureMap &m) {
  return m.kind == FeatureKind::abs_pow || m.kind == FeatureKind::exp_sigmoid;
}
// Whether the bf16 cores take the map: abs_pow only. exp_sigmoid's features
// are unbounded exps whose sums lose too much in bf16 products, so it runs in
// fp32 (SPEC-polaformerpp T1).
inline bool bf16_feature_map(const FeatureMap &m) { return m.kind == FeatureKind::abs_pow; }

// 2-D rotary position tables (SPEC-polaformerpp 2.6), shared by every head:
// cos[t * width + c] and sin[...] for token t and feature c, the two entries
// of an interleaved pair (2i, 2i+1) equal. Rotating x (width wide) at token t:
//   y[2i]   = x[2i] cos - x[2i+1] sin,   y[2i+1] = x[2i+1] cos + x[2i] sin.
struct RopeTable {
  const float *cos = nullptr, *sin = nullptr; // (tokens, width) dense
  int64_t width = 0;
  explicit operator bool() const { return cos != nullptr; }
};

// Polarity-aware linear attention core (SPEC section 3, steps 2-7), for one
// sequence. Inputs are token-major with per-row strides (ld_*), head h owns
// channels [h*head_dim, (h+1)*head_dim). The key side streams over n_k tokens
// once; the query side streams over n_q tokens once; nothing of size n_q x n_k
// exists. `out` receives [x_sim, x_opp] per head (head_dim wide).
// An output of at least kPolaStreamOutBytes (n_q * ld_out floats) whose rows
// and heads are vector-aligned is written with non-temporal stores: it
// bypasses the caches, so a caller that reads it right back pays a DRAM trip.
inline constexpr double kPolaStreamOutBytes = 64.0 * (1 << 20);
struct PolarityAttnArgs {
  int64_t n_q = 0, n_k = 0;
  int heads = 0, head_dim = 0;
  const float *q = nullptr; int64_t ld_q = 0;
  const float *k = nullptr; int64_t ld_k = 0;
  const float *v = nullptr; int64_t ld_v = 0;
  const float *pos_enc = nullptr;   // (n_k, heads*head_dim) dense, added to k; may be null
  const float *inv_scale = nullptr; // (heads*head_dim): 1 / softplus(scale)
  FeatureMap feature;               // phi
  // exp_sigmoid only, optional: width 2*head_dim over the n_q == n_k tokens.
  // The numerator's features (the rotated psi summed into the state, the
  // rotated phi that reads it) are rotated; the normaliser's are not.
  RopeTable rope;
  float *out = nullptr; int64_t ld_out = 0;
  int threads = 1;                  // worker threads the call may use (deterministic for any value)
};
// Whether a's rope can be applied: it is read only by exp_sigmoid, and there
// it must be absent or 2*head_dim wide over a sequence with n_q == n_k (one
// table indexes both the query and the key tokens).
inline bool rope_fits(const PolarityAttnArgs &a) {
  return a.feature.kind != FeatureKind::exp_sigmoid || !a.rope ||
         (a.rope.width == 2 * int64_t(a.head_dim) && a.n_q == a.n_k);
}

// Swin window attention with softmax (SPEC section 5, "S" blocks), for a batch
// of windows that share one relative-position bias. qkv rows are
// [q | k | v] (3*heads*head_dim wide, stride ld_qkv) in window-major token
// order: window w owns rows [w*t, (w+1)*t) with t tokens per window.
// bias: (heads, t, t) dense. mask: (n_mask, t, t) or null; window w uses
// mask[w % n_mask]. Output rows are heads*head_dim wide (stride ld_out).
struct WindowAttnArgs {
  int64_t windows = 0; int tokens = 0;
  int heads = 0, head_dim = 0;
  float scale = 1.0f;
  const float *qkv = nullptr; int64_t ld_qkv = 0;
  const float *bias = nullptr;
  const float *mask = nullptr; int64_t n_mask = 0;
  float *out = nullptr; int64_t ld_out = 0;
  int threads = 1;
};

// Global softmax attention over one sequence of n tokens (PolaFormer++
// stages 3-4, SPEC-polaformerpp 2.8): per head, q and k rotated by `rope`
// (width head_dim; null: no rotation), then out = softmax(scale * q~ k~^T) v
// with no mask and no bias. q, k, v: token-major rows with strides, head h
// owning channels [h*head_dim, (h+1)*head_dim). Key blocks are folded into
// an online softmax (flash style): extra memory is O(head_dim) per query
// row, never n x n.
struct GlobalAttnArgs {
  int64_t n = 0;
  int heads = 0, head_dim = 0;
  float scale = 1.0f; // multiplies the rotated q (d^-1/2)
  const float *q = nullptr; int64_t ld_q = 0;
  const float *k = nullptr; int64_t ld_k = 0;
  const float *v = nullptr; int64_t ld_v = 0;
  RopeTable rope;
  float *out = nullptr; int64_t ld_out = 0;
  int threads = 1;
};

// Depthwise k x k convolution, stride 1, zero padding k/2, over token rows
// (NHWC: row (b*height + y)*width + x holds that pixel's channels), for
// `batch` images of height x width:
//   dst = conv(src) + bias  (+ src where add_src)  (+ dst where accumulate)
// weight: (channels, k*k) (PyTorch's (C, 1, k, k)), bias: (channels) or null.
// src and dst must not overlap. With dst_bf16 set the output goes there
// instead, each value rounded to bf16 (nearest even, as to_bf16), with row
// stride ld_dst, and dst is not read or written; it excludes accumulate.
struct DepthwiseConvArgs {
  int64_t batch = 1, height = 0, width = 0, channels = 0;
  int kernel = 3;
  const float *src = nullptr; int64_t ld_src = 0;
  const float *weight = nullptr, *bias = nullptr;
  float *dst = nullptr; int64_t ld_dst = 0;
  uint16_t *dst_bf16 = nullptr; // the output as bf16 (for a bf16 GEMM that reads it), instead of dst
  bool add_src = false;    // a residual around the conv (the conditional position conv, the FFN's inner conv)
  bool accumulate = false; // add into what dst holds (LePE onto the attention output)
  int threads = 1;
};

} // namespace pola::kernels
