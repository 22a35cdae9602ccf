// Swin window attention with softmax (SPEC section 5, "S" blocks). One work
// item is one (window, head): scores = (q * scale) k^T + bias[h] (+ mask),
// row softmax with the max subtracted, then @ v. Windows are small (t ~ 49..144,
// d = 32), so k is transposed into a padded scratch once per item and every
// score row is a run of FMAs over contiguous keys.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

namespace window_detail {

constexpr int kMaxVecs = 4; // vectors per register tile (per query)
// Queries per register tile: with d = 32 the value tile has only two vectors
// per query, so four queries are needed to keep enough FMAs in flight; with
// 16 registers (AVX2) four queries x four vectors would spill: two.
template <class A> constexpr int kQueries = kRegisters<A> == 32 ? 4 : 2;

// s[q, c:c+V*L] = sum_i qs[q, i] * kt[i, c:...] for Q queries (rows of tp).
template <class A, int Q, int V>
inline void score_tile(const float *qs, int d, const float *kt, int64_t tp, int64_t c, float *s) {
  constexpr int L = kLanes<A>;
  Vec<A> acc[Q][V];
  for (int q = 0; q < Q; ++q)
    for (int v = 0; v < V; ++v) acc[q][v] = Vec<A>(0.0f);
  for (int i = 0; i < d; ++i) {
    Vec<A> kv[V];
    for (int v = 0; v < V; ++v) kv[v] = Vec<A>::load_aligned(kt + i * tp + c + v * L);
    for (int q = 0; q < Q; ++q) {
      const Vec<A> b(qs[q * d + i]);
      for (int v = 0; v < V; ++v) acc[q][v] = xsimd::fma(b, kv[v], acc[q][v]);
    }
  }
  for (int q = 0; q < Q; ++q)
    for (int v = 0; v < V; ++v) acc[q][v].store_aligned(s + q * tp + c + v * L);
}

// o[q, c:c+V*L] = sum_j p[q, j] * vp[j, c:...] for Q queries (rows of dp).
template <class A, int Q, int V>
inline void value_tile(const float *p, int64_t tp, int t, const float *vp, int64_t dp, int64_t c,
                       float *o) {
  constexpr int L = kLanes<A>;
  Vec<A> acc[Q][V];
  for (int q = 0; q < Q; ++q)
    for (int v = 0; v < V; ++v) acc[q][v] = Vec<A>(0.0f);
  for (int j = 0; j < t; ++j) {
    Vec<A> vv[V];
    for (int v = 0; v < V; ++v) vv[v] = Vec<A>::load_aligned(vp + j * dp + c + v * L);
    for (int q = 0; q < Q; ++q) {
      const Vec<A> b(p[q * tp + j]);
      for (int v = 0; v < V; ++v) acc[q][v] = xsimd::fma(b, vv[v], acc[q][v]);
    }
  }
  for (int q = 0; q < Q; ++q)
    for (int v = 0; v < V; ++v) acc[q][v].store_aligned(o + q * dp + c + v * L);
}

template <class A, int Q>
inline void scores(const float *qs, int d, const float *kt, int64_t tp, float *s) {
  const int nvec = int(tp / kLanes<A>);
  int v0 = 0;
  for (; v0 + kMaxVecs <= nvec; v0 += kMaxVecs)
    score_tile<A, Q, kMaxVecs>(qs, d, kt, tp, int64_t(v0) * kLanes<A>, s);
  with_width<kMaxVecs - 1>(nvec - v0, [&](auto w) {
    score_tile<A, Q, decltype(w)::value>(qs, d, kt, tp, int64_t(v0) * kLanes<A>, s);
  });
}

template <class A, int Q>
inline void values(const float *p, int64_t tp, int t, const float *vp, int64_t dp, float *o) {
  const int nvec = int(dp / kLanes<A>);
  int v0 = 0;
  for (; v0 + kMaxVecs <= nvec; v0 += kMaxVecs)
    value_tile<A, Q, kMaxVecs>(p, tp, t, vp, dp, int64_t(v0) * kLanes<A>, o);
  with_width<kMaxVecs - 1>(nvec - v0, [&](auto w) {
    value_tile<A, Q, decltype(w)::value>(p, tp, t, vp, dp, int64_t(v0) * kLanes<A>, o);
  });
}

// Adds bias (+ mask) to one score row, softmaxes it in place over t entries
// (pads become 0) and returns 1 / sum so the caller can scale the output.
template <class A>
inline float softmax_row(float *s, int t, const float *bias, const float *mask, const Vec<A> &lanes) {
  constexpr int L = kLanes<A>;
  const Vec<A> neg_inf(-INFINITY);
  Vec<A> mx = neg_inf;
  for (int j = 0; j < t; j += L) {
    const int n = t - j < L ? t - j : L;
    Vec<A> v = Vec<A>::load_aligned(s + j) + load_first<A>(bias + j, n);
    if (mask) v += load_first<A>(mask + j, n);
    v = xsimd::select(lanes < Vec<A>(float(n)), v, neg_inf);
    v.store_aligned(s + j);
    mx = xsimd::max(mx, v);
  }
  alignas(64) float lane_max[L];
  mx.store_aligned(lane_max);
  float m = lane_max[0];
  for (int i = 1; i < L; ++i) m = lane_max[i] > m ? lane_max[i] : m;
  Vec<A> sum(0.0f);
  for (int j = 0; j < t; j += L) {
    const Vec<A> e = xsimd::exp(Vec<A>::load_aligned(s + j) - Vec<A>(m)); // exp(-inf) = 0 on pads
    e.store_aligned(s + j);
    sum += e;
  }
  return 1.0f / xsimd::hadd(sum);
}

} // namespace window_detail

template <class A> void window_attention(const WindowAttnArgs &a) {
  using namespace window_detail;
  constexpr int L = kLanes<A>;
  const int t = a.tokens, d = a.head_dim;
  if (a.windows <= 0 || t <= 0 || a.heads <= 0 || d <= 0) return;
  const int64_t tp = round_up_lanes<A>(t), dp = round_up_lanes<A>(d);
  const int64_t width = int64_t(a.heads) * d, items = a.windows * a.heads;
  const int threads = a.threads > 1 ? a.threads : 1;
#pragma omp parallel num_threads(threads) if (threads > 1 && items > 1)
  {
    // Per-thread scratch; pads (keys >= t, channels >= d) stay zero throughout.
    ScratchBuffer kt(d * tp), vp(t * dp), qs(kQueries<A> * d), s(kQueries<A> * tp), o(kQueries<A> * dp);
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
      for (int i = 0; i < t;) {
        const int nq = t - i >= kQueries<A> ? kQueries<A> : t - i;
        for (int q = 0; q < nq; ++q)
          for (int c = 0; c < d; ++c) qs.data[q * d + c] = rows[(i + q) * a.ld_qkv + c] * a.scale;
        with_width<kQueries<A>>(nq, [&](auto n) { scores<A, decltype(n)::value>(qs.data, d, kt.data, tp, s.data); });
        float inv_sum[kQueries<A>];
        for (int q = 0; q < nq; ++q)
          inv_sum[q] = softmax_row<A>(s.data + q * tp, t, a.bias + (int64_t(h) * t + i + q) * t,
                                      mask ? mask + int64_t(i + q) * t : nullptr, lanes);
        with_width<kQueries<A>>(nq, [&](auto n) { values<A, decltype(n)::value>(s.data, tp, t, vp.data, dp, o.data); });
        for (int q = 0; q < nq; ++q) {
          float *dst = a.out + (w * t + i + q) * a.ld_out + int64_t(h) * d;
          for (int c = 0; c < d; c += L)
            store_first<A>(dst + c, Vec<A>::load_aligned(o.data + q * dp + c) * Vec<A>(inv_sum[q]), d - c);
        }
        i += nq;
      }
    }
  }
}

} // namespace pola::kernels::simd
