// Swin window attention (SPEC section 5, "S" blocks), scalar, in fp32
// (window_attention) and with its two products in bf16 (window_attention
// keyed bf16): per window and head,
// softmax((q k^T) * scale + bias[h] + mask[w % n_mask]) @ v.
// One loop nest serves both; a policy (Fp32Window, Bf16Window) says how a
// score is summed, how the weights and values are held and in what type
// their sums run, each exactly as its keying has always computed them.
//
// Keyed bf16, the oracle of simd/window_attention_bf16.hpp, following what it
// documents, per window, head and query row i:
//   s_j = bf16(q_i) . bf16(k_j), summed in double, then in fp32
//   x_j = fma(s_j, scale, bias[h, i, j]) (+ mask[i, j]),
//   w_j = bf16(exp(x_j - max_j x_j)),  out_i = (sum_j w_j bf16(v_j)) / sum_j w_j,
// the value sums in double over the rounded weights, so each output row is a
// convex combination of the bf16 values. (The fp32 reference scales q before
// its product; the bf16 kernel scales the product.)
#include "kernels/reference/reference.h"

#include <cmath>
#include <vector>

#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels::reference {

namespace {

struct Fp32Window {
  using Sum = float; // weights, their sum and the value sums
  // (q_i * scale) . k_j in fp32, then + bias.
  static float score(const float *q, const float *k, int d, float scale, float bias) {
    float dot = 0.0f;
    for (int c = 0; c < d; ++c) dot += (q[c] * scale) * k[c];
    return dot + bias;
  }
  static float weight(float e) { return e; }
  static float value(float v) { return v; }
  static float output(float acc, float sum) { return acc * (1.0f / sum); }
};

struct Bf16Window {
  using Sum = double;
  static double bf16(float x) { return double(bf16_to_float(bf16_rne(x))); }
  // bf16(q_i) . bf16(k_j) exact in double, then fma(fp32 dot, scale, bias).
  static float score(const float *q, const float *k, int d, float scale, float bias) {
    double dot = 0.0;
    for (int c = 0; c < d; ++c) dot += bf16(q[c]) * bf16(k[c]);
    return std::fma(float(dot), scale, bias);
  }
  static double weight(float e) { return bf16(e); }
  static double value(float v) { return bf16(v); }
  static float output(double acc, double sum) { return float(acc / sum); }
};

template <class P>
void window_core(const WindowAttnArgs &a) {
  using Sum = typename P::Sum;
  const int t = a.tokens, d = a.head_dim;
  const int64_t width = int64_t(a.heads) * d;
  const int64_t items = a.windows * a.heads;
#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1 && items > 1) schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t w = item / a.heads;
    const int h = int(item % a.heads);
    const float *base = a.qkv + w * t * a.ld_qkv;
    const float *mask = a.mask ? a.mask + (w % a.n_mask) * t * t : nullptr;
    std::vector<float> x(t);
    std::vector<Sum> wt(t);
    for (int i = 0; i < t; ++i) {
      const float *q = base + i * a.ld_qkv + int64_t(h) * d;
      float mx = -INFINITY;
      for (int j = 0; j < t; ++j) {
        const float *k = base + j * a.ld_qkv + width + int64_t(h) * d;
        float v = P::score(q, k, d, a.scale, a.bias[(int64_t(h) * t + i) * t + j]);
        if (mask) v += mask[int64_t(i) * t + j];
        x[j] = v;
        mx = std::fmax(mx, v);
      }
      Sum sum = 0;
      for (int j = 0; j < t; ++j) {
        wt[j] = P::weight(std::exp(x[j] - mx));
        sum += wt[j];
      }
      float *o = a.out + (w * t + i) * a.ld_out + int64_t(h) * d;
      for (int c = 0; c < d; ++c) {
        Sum acc = 0;
        for (int j = 0; j < t; ++j) acc += wt[j] * P::value(base[j * a.ld_qkv + 2 * width + int64_t(h) * d + c]);
        o[c] = P::output(acc, sum);
      }
    }
  }
}

} // namespace

void window_attention(const WindowAttnArgs &a) { window_core<Fp32Window>(a); }
void window_attention_bf16(const WindowAttnArgs &a) { window_core<Bf16Window>(a); }

} // namespace pola::kernels::reference
