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
};
struct FeatureMap {
  FeatureKind kind = FeatureKind::abs_pow;
  const float *power = nullptr; // abs_pow: (heads*head_dim) exponents, 1 + alpha * sigmoid(power_param)
};
// Whether the kernels know the map's kind.
inline bool known_feature_map(const FeatureMap &m) { return m.kind == FeatureKind::abs_pow; }

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
  float *out = nullptr; int64_t ld_out = 0;
  int threads = 1;                  // worker threads the call may use (deterministic for any value)
};

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

} // namespace pola::kernels
