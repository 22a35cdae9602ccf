// Swin window attention with softmax (SPEC section 5, "S" blocks). One work
// item is one (window, head): scores = (q k^T) scale + bias[h] (+ mask), row
// softmax with the max subtracted, then @ v. Windows are small (t ~ 49..144,
// d = 32), so k is transposed into a padded scratch once per item and every
// score row is a run of FMAs over contiguous keys.
// Queries go in blocks: scores for the block (register tiles of a few
// queries, broadcasting q straight from the input rows), the block's softmax
// rows, then its output rows, written straight to `out` with 1 / sum applied.
// The value tiles take as many queries as half the registers allow: with
// d = 32 on AVX-512 that is 8 queries of 2 vectors, so each value row loaded
// serves 8 queries instead of 4 (faster than the old 4-query tiles with a
// q * scale copy and xsimd::exp: bench/window_attention/README.md).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

namespace window_detail {

constexpr int kMaxVecs = 4; // vectors per register tile (per query)
// Queries per score tile: with four vectors per query (t ~ 49..64) four
// queries fill 16 accumulators; with 16 registers (AVX2) two.
template <class A> constexpr int kScoreQueries = kRegisters<A> == 32 ? 4 : 2;
// Accumulators a tile may hold: half the registers, leaving the rest for the
// loaded rows and the broadcasts.
template <class A> constexpr int kAccumulators = kRegisters<A> / 2;
// Queries per block (scores, softmax, values): the widest value tile.
template <class A> constexpr int kBlockQueries = kRegisters<A> == 32 ? 8 : 4;

// s[q, c:c+V*L] = sum_i q[q, i] * kt[i, c:...] for Q query rows (stride ld_q).
template <class A, int Q, int V>
inline void score_tile(const float *q, int64_t ld_q, int d, const float *kt, int64_t tp, int64_t c, float *s) {
  constexpr int L = kLanes<A>;
  Vec<A> acc[Q][V];
  for (int r = 0; r < Q; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = Vec<A>(0.0f);
  for (int i = 0; i < d; ++i) {
    Vec<A> kv[V];
    for (int v = 0; v < V; ++v) kv[v] = Vec<A>::load_aligned(kt + i * tp + c + v * L);
    for (int r = 0; r < Q; ++r) {
      const Vec<A> b(q[r * ld_q + i]);
      for (int v = 0; v < V; ++v) acc[r][v] = xsimd::fma(b, kv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < Q; ++r)
    for (int v = 0; v < V; ++v) acc[r][v].store_aligned(s + r * tp + c + v * L);
}

template <class A, int Q>
inline void scores(const float *q, int64_t ld_q, int d, const float *kt, int64_t tp, float *s) {
  const int nvec = int(tp / kLanes<A>);
  int v0 = 0;
  for (; v0 + kMaxVecs <= nvec; v0 += kMaxVecs)
    score_tile<A, Q, kMaxVecs>(q, ld_q, d, kt, tp, int64_t(v0) * kLanes<A>, s);
  with_width<kMaxVecs - 1>(nvec - v0, [&](auto w) {
    score_tile<A, Q, decltype(w)::value>(q, ld_q, d, kt, tp, int64_t(v0) * kLanes<A>, s);
  });
}

// out[q, c:c+V*L] = inv[q] * sum_j p[q, j] * vp[j, c:...] for Q queries
// (rows of tp), columns past d left untouched.
template <class A, int Q, int V>
inline void value_tile(const float *p, int64_t tp, int t, const float *vp, int64_t dp, int64_t c, int d,
                       const float *inv, float *out, int64_t ld_out) {
  constexpr int L = kLanes<A>;
  Vec<A> acc[Q][V];
  for (int r = 0; r < Q; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = Vec<A>(0.0f);
  for (int j = 0; j < t; ++j) {
    Vec<A> vv[V];
    for (int v = 0; v < V; ++v) vv[v] = Vec<A>::load_aligned(vp + j * dp + c + v * L);
    for (int r = 0; r < Q; ++r) {
      const Vec<A> b(p[r * tp + j]);
      for (int v = 0; v < V; ++v) acc[r][v] = xsimd::fma(b, vv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < Q; ++r)
    for (int v = 0; v < V; ++v) {
      const int64_t col = c + v * L;
      const Vec<A> o = acc[r][v] * Vec<A>(inv[r]);
      if (col + L <= d) o.store_unaligned(out + r * ld_out + col);
      else store_first<A>(out + r * ld_out + col, o, int(d - col));
    }
}

// The block's nq output rows: column groups of up to kMaxVecs vectors, each
// over as many queries as kAccumulators allows.
template <class A>
inline void values(const float *p, int64_t tp, int t, const float *vp, int64_t dp, int d, int nq,
                   const float *inv, float *out, int64_t ld_out) {
  constexpr int L = kLanes<A>;
  const int nvec = int(dp / L);
  for (int v0 = 0; v0 < nvec; v0 += kMaxVecs) {
    const int nv = nvec - v0 < kMaxVecs ? nvec - v0 : kMaxVecs;
    with_width<kMaxVecs>(nv, [&](auto w) {
      constexpr int V = decltype(w)::value;
      constexpr int kQ = kAccumulators<A> / V < kBlockQueries<A> ? kAccumulators<A> / V : kBlockQueries<A>;
      for (int q0 = 0; q0 < nq; q0 += kQ) {
        const int n = nq - q0 < kQ ? nq - q0 : kQ;
        with_width<kQ>(n, [&](auto m) {
          value_tile<A, decltype(m)::value, V>(p + q0 * tp, tp, t, vp, dp, int64_t(v0) * L, d, inv + q0,
                                               out + q0 * ld_out, ld_out);
        });
      }
    });
  }
}

// exp(x) for x <= 0 (and -inf, which gives 0): 2^n P(r) with x log2(e) =
// n + r, |r| <= 1/2, P the degree-6 fit of 2^r shared with abs_pow (relative
// error ~1e-7 near 0, ~1e-6 at x = -16, where weights are already < 1e-7).
// Below 2^-126 the result is 0 (softmax weights that small change no sum).
// 13 operations against ~20 for xsimd::exp, whose range checks a softmax
// with its max subtracted never needs.
template <class A> inline Vec<A> exp_nonpositive(const Vec<A> &x) {
  using I = xsimd::batch<int32_t, A>;
  const Vec<A> y = xsimd::max(x * Vec<A>(1.44269504088896341f), Vec<A>(-127.0f));
  // y + 1.5 * 2^23 + 127 lies in [2^23, 2^24), where floats are the
  // integers: k is rounded to nearest and its low mantissa bits hold n + 127
  // in [0, 127]; shifted into the exponent field they make 2^n (0 for n = -127).
  const Vec<A> shifter(12582912.0f + 127.0f);
  const Vec<A> k = y + shifter;
  const Vec<A> r = y - (k - shifter);
  const Vec<A> scale = xsimd::bitwise_cast<Vec<A>>(xsimd::bitwise_cast<I>(k) << 23);
  return horner<A>(r, kExp2) * scale;
}

// scale * s + bias (+ mask) over one score row, softmaxed in place over t
// entries (pads become 0); returns 1 / sum for the caller to scale the output.
template <class A>
inline float softmax_row(float *s, int t, float scale, const float *bias, const float *mask, const Vec<A> &lanes) {
  constexpr int L = kLanes<A>;
  const Vec<A> neg_inf(-INFINITY), sc(scale);
  Vec<A> mx = neg_inf;
  for (int j = 0; j < t; j += L) {
    const int n = t - j < L ? t - j : L;
    Vec<A> v = xsimd::fma(Vec<A>::load_aligned(s + j), sc, load_first<A>(bias + j, n));
    if (mask) v += load_first<A>(mask + j, n);
    v = xsimd::select(lanes < Vec<A>(float(n)), v, neg_inf);
    v.store_aligned(s + j);
    mx = xsimd::max(mx, v);
  }
  const Vec<A> m(lane_max<A>(mx));
  Vec<A> sum(0.0f);
  for (int j = 0; j < t; j += L) {
    const Vec<A> e = exp_nonpositive<A>(Vec<A>::load_aligned(s + j) - m); // 0 on pads
    e.store_aligned(s + j);
    sum += e;
  }
  return 1.0f / xsimd::hadd(sum);
}

} // namespace window_detail

template <class A> void window_attention(const WindowAttnArgs &a) {
  using namespace window_detail;
  constexpr int L = kLanes<A>, QB = kBlockQueries<A>, QS = kScoreQueries<A>;
  const int t = a.tokens, d = a.head_dim;
  if (a.windows <= 0 || t <= 0 || a.heads <= 0 || d <= 0) return;
  const int64_t tp = round_up_lanes<A>(t), dp = round_up_lanes<A>(d);
  const int64_t width = int64_t(a.heads) * d, items = a.windows * a.heads;
  const int threads = a.threads > 1 ? a.threads : 1;
#pragma omp parallel num_threads(threads) if (threads > 1 && items > 1)
  {
    // Per-thread scratch; pads (keys >= t, channels >= d) stay zero throughout.
    ScratchBuffer kt(d * tp), vp(t * dp), s(QB * tp);
    alignas(64) float lane_index[L];
    for (int i = 0; i < L; ++i) lane_index[i] = float(i);
    const Vec<A> lanes = Vec<A>::load_aligned(lane_index);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t w = item / a.heads;
      const int h = int(item % a.heads);
      const float *rows = a.qkv + w * t * a.ld_qkv + int64_t(h) * d;
      const float *mask = a.mask ? a.mask + (w % a.n_mask) * t * t : nullptr;
      for (int j = 0; j < t; ++j) {
        const float *kr = rows + j * a.ld_qkv + width, *vr = kr + width;
        for (int c = 0; c < d; ++c) kt.data[c * tp + j] = kr[c];
        for (int c = 0; c < d; ++c) vp.data[j * dp + c] = vr[c];
      }
      for (int i = 0; i < t; i += QB) {
        const int nb = t - i < QB ? t - i : QB;
        for (int q0 = 0; q0 < nb; q0 += QS)
          with_width<QS>(nb - q0 < QS ? nb - q0 : QS, [&](auto n) {
            scores<A, decltype(n)::value>(rows + (i + q0) * a.ld_qkv, a.ld_qkv, d, kt.data, tp, s.data + q0 * tp);
          });
        float inv_sum[QB];
        for (int q = 0; q < nb; ++q)
          inv_sum[q] = softmax_row<A>(s.data + q * tp, t, a.scale, a.bias + (int64_t(h) * t + i + q) * t,
                                      mask ? mask + int64_t(i + q) * t : nullptr, lanes);
        values<A>(s.data, tp, t, vp.data, dp, d, nb, inv_sum, a.out + (w * t + i) * a.ld_out + int64_t(h) * d,
                  a.ld_out);
      }
    }
  }
}

} // namespace pola::kernels::simd
