// Swin window attention (window_attention.hpp) with its two products in bf16
// and fp32 accumulation, by the dot-product policy of pola_bf16_products.hpp:
//   scores  S (t x tp)  = q (bf16 rows, pairs of channels) . K pairs,
//   values  O (t x d)   = P (bf16 softmax weights, pairs of keys) . V pairs.
// The scores' scale, bias, mask, the softmax and 1 / sum stay fp32; the
// weights are rounded to bf16 before the value product and the sum is taken
// over the rounded weights, so each output row is an exact convex
// combination of the bf16 values. Heads whose width is not a multiple of 32
// (the products' column blocks) and windows of more than kMaxWindowKeys are
// refused (window_bf16_fits: the registry runs the fp32 kernel for them).
//
// Layouts per (window, head) item, all per-thread scratch:
//  - qb: R x d bf16, the query rows (R = t rounded up to the policy's rows);
//  - kp: d/2 VNNI rows of tp key pairs: word (p, j) = (k[j][2p], k[j][2p+1]),
//    built by converting 16 keys' rows to bf16 and one 16 x 16 transpose of
//    32-bit words per 32 channels (the fp32 kernel transposes element by element);
//  - vp: tp/2 VNNI rows of d: (v[2p][c], v[2p+1][c]);
//  - s: R x tp fp32 scores, pb: R x tp bf16 weights, o: R x d fp32.
// Pads (rows >= t, keys >= t) are zero in qb, kp, vp and pb, so they add 0.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/refuse.h"
#include "kernels/scratch.h"
#include "kernels/simd/pola_bf16_products.hpp"
#include "kernels/simd/pola_bf16_tiles.hpp"
#include "kernels/simd/window_attention.hpp"

namespace pola::kernels::simd::bf16_detail {

// Most keys per window this kernel takes (its per-row stack buffers). Swin's are 49 (7 x 7) and 144 (12 x 12).
constexpr int kMaxWindowKeys = 256;

// Whether the bf16 kernel takes a problem: heads in whole 32-column blocks
// of the products, windows up to kMaxWindowKeys.
inline bool window_bf16_fits(const WindowAttnArgs &a) {
  return a.head_dim % 32 == 0 && a.tokens <= kMaxWindowKeys;
}

// Keys [j0, j0 + 16) of one head (n of them valid) into kp: their rows in
// bf16, so that 32-bit word p of row j is the pair (k[j][2p], k[j][2p+1]);
// transposed as 32-bit words, word row p lands at kp + p * tp + j0.
POLA_BF16_TARGET inline void key_pairs16(const float *k0, int64_t ld, int n, int d, int64_t tp, uint32_t *kp) {
  for (int c = 0; c < d; c += 32) {
    __m512 r[16];
    for (int j = 0; j < 16; ++j)
      r[j] = j < n ? (__m512)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(k0 + j * ld + c + 16), _mm512_loadu_ps(k0 + j * ld + c))
                   : _mm512_setzero_ps();
    transpose16(r);
    for (int p = 0; p < 16; ++p) _mm512_storeu_ps(reinterpret_cast<float *>(kp + (c / 2 + p) * tp), r[p]);
  }
}

// One softmax row: scale * s + bias (+ mask) over t keys, exp with the max
// subtracted, rounded to bf16 into pb (pads 0); returns 1 / (sum of the
// rounded weights).
POLA_BF16_TARGET inline float softmax_row_bf16(const float *s, int t, int64_t tp, float scale, const float *bias,
                                               const float *mask, uint16_t *pb) {
  using window_detail::exp_nonpositive;
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-INFINITY);
  alignas(64) float x[kMaxWindowKeys];
  for (int j = 0; j < t; j += 16) {
    const int n = std::min(16, t - j);
    const __mmask16 m = __mmask16((1u << n) - 1);
    __m512 v = _mm512_fmadd_ps(_mm512_loadu_ps(s + j), sc, _mm512_maskz_loadu_ps(m, bias + j));
    if (mask) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, mask + j));
    v = _mm512_mask_blend_ps(m, _mm512_set1_ps(-INFINITY), v);
    _mm512_store_ps(x + j, v);
    mx = _mm512_max_ps(mx, v);
  }
  const V top(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < tp; j += 16) {
    const __m256i e = j < t ? to_bf16x16(exp_nonpositive<A>(V(_mm512_load_ps(x + j)) - top)) : _mm256_setzero_si256();
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(pb + j), e);
    // The rounded weight back in fp32 (bf16 is the upper half of a float).
    sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(e), 16)));
  }
  return 1.0f / _mm512_reduce_add_ps(sum);
}

template <class P>
POLA_BF16_TARGET inline void window_attention_bf16(const WindowAttnArgs &a) {
  const int t = a.tokens, d = a.head_dim;
  if (!window_bf16_fits(a)) refuse("window_attention bf16", "head_dim not a multiple of 32, or over 256 tokens");
  if (a.windows <= 0 || t <= 0 || a.heads <= 0 || d <= 0) return;
  constexpr int R0 = P::kRows;
  const int64_t tp = (int64_t(t) + 31) / 32 * 32, rows = (int64_t(t) + R0 - 1) / R0 * R0;
  const int64_t width = int64_t(a.heads) * d, items = a.windows * a.heads;
  const int threads = a.threads > 1 ? a.threads : 1;
#pragma omp parallel num_threads(threads) if (threads > 1 && items > 1)
  {
    // Zeroed once: the pad rows and keys are never written.
    ScratchBuffer qb(rows * d / 2), kp(d / 2 * tp), vp(tp / 2 * d), s(rows * tp), pb(rows * tp / 2), o(rows * d);
    uint16_t *q16 = reinterpret_cast<uint16_t *>(qb.data), *p16 = reinterpret_cast<uint16_t *>(pb.data);
    uint16_t *v16 = reinterpret_cast<uint16_t *>(vp.data);
    uint32_t *k32 = reinterpret_cast<uint32_t *>(kp.data);
    float inv_sum[kMaxWindowKeys];
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t w = item / a.heads;
      const int h = int(item % a.heads);
      const float *qr = a.qkv + w * t * a.ld_qkv + int64_t(h) * d, *kr = qr + width, *vr = kr + width;
      const float *mask = a.mask ? a.mask + (w % a.n_mask) * t * t : nullptr;
      for (int i = 0; i < t; ++i)
        for (int c = 0; c < d; c += 16)
          _mm256_storeu_si256(reinterpret_cast<__m256i *>(q16 + i * d + c),
                              to_bf16x16(_mm512_loadu_ps(qr + i * a.ld_qkv + c)));
      for (int j0 = 0; j0 < tp; j0 += 16)
        key_pairs16(kr + j0 * a.ld_qkv, a.ld_qkv, std::max(0, std::min(16, t - j0)), d, tp, k32 + j0);
      const __m512 zero = _mm512_setzero_ps();
      for (int p = 0; 2 * p < t; ++p) {
        const float *v0 = vr + 2 * p * a.ld_qkv, *v1 = v0 + a.ld_qkv;
        for (int c = 0; c < d; c += 16)
          store_pair(_mm512_loadu_ps(v0 + c), 2 * p + 1 < t ? _mm512_loadu_ps(v1 + c) : zero, v16 + p * 2 * d + 2 * c);
      }
      P::product(q16, d, reinterpret_cast<const uint16_t *>(k32), tp, rows, d / 2, s.data, true);
      for (int i = 0; i < t; ++i)
        inv_sum[i] = softmax_row_bf16(s.data + i * tp, t, tp, a.scale, a.bias + (int64_t(h) * t + i) * t,
                                      mask ? mask + int64_t(i) * t : nullptr, p16 + i * tp);
      P::product(p16, tp, v16, d, rows, tp / 2, o.data, true);
      for (int i = 0; i < t; ++i) {
        float *dst = a.out + (w * t + i) * a.ld_out + int64_t(h) * d;
        const __m512 f = _mm512_set1_ps(inv_sum[i]);
        for (int c = 0; c < d; c += 16) _mm512_storeu_ps(dst + c, _mm512_mul_ps(_mm512_load_ps(o.data + i * d + c), f));
      }
    }
  }
}

} // namespace pola::kernels::simd::bf16_detail
