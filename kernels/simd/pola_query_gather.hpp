// Query-side product q_sim @ M for narrow heads (M rows of at most 32 floats:
// two AVX-512 or four AVX2 vectors). There a sign-pattern band does only a
// few FMAs per token between its loop exits and output load/stores, so
// instead each token's output stays in registers and, per channel j, the row
// of M its sign selects (j or d + j) is loaded and accumulated.
#pragma once

#include <cstdint>

#include "kernels/simd/common.hpp"

namespace pola::kernels::simd::pola_detail {

// Offsets (floats) of the M row each channel of a token selects: row j for
// pos(q'_j), row d + j for neg(q'_j), from u's sign bit (a -0 picks row
// d + j, but its magnitude is 0). Lane i of u is channel j + i.
template <class A>
inline xsimd::batch<int32_t, A> gather_row_offsets(const Vec<A> &u, int j, int d, int64_t mp,
                                                   const xsimd::batch<int32_t, A> &lane_ids) {
  using I = xsimd::batch<int32_t, A>;
  return lane_ids * I(int32_t(mp)) + I(int32_t(j * mp)) +
         ((xsimd::bitwise_cast<I>(u) >> 31) & I(int32_t(d * mp)));
}

// ob[t, c:c+V*L] = sum_j mag[t, j] * M[off[t, j] + c:...] for T tokens.
template <class A, int T, int V>
inline void gather_tile(const float *mag, const int32_t *off, int d, const float *m, int64_t c, float *ob,
                        int64_t mp) {
  constexpr int L = kLanes<A>;
  Vec<A> acc[T][V];
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < V; ++v) acc[t][v] = Vec<A>(0.0f);
  for (int j = 0; j < d; ++j) {
    for (int t = 0; t < T; ++t) {
      const Vec<A> b(mag[t * d + j]);
      const float *row = m + off[t * d + j] + c;
      for (int v = 0; v < V; ++v) acc[t][v] = xsimd::fma(b, Vec<A>::load_aligned(row + v * L), acc[t][v]);
    }
  }
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < V; ++v) acc[t][v].store_aligned(ob + t * mp + c + v * L);
}

// Whether a head of M rows mp floats wide takes this path.
inline bool gather_fits(int64_t mp) { return mp <= 32; }

// All mp / L (<= 4) vectors of T tokens.
template <class A, int T>
inline void gather_tokens(const float *mag, const int32_t *off, int d, const float *m, float *ob, int64_t mp) {
  with_width<4>(int(mp / kLanes<A>), [&](auto w) {
    gather_tile<A, T, decltype(w)::value>(mag, off, d, m, 0, ob, mp);
  });
}

// ob (tokens x mp) = q_sim @ M for tb tokens of one head.
template <class A>
inline void gather_accumulate(const float *mag, const int32_t *off, int d, const float *m, int64_t tb,
                              float *ob, int64_t mp) {
  // 8 accumulators hide the FMA latency: 4 tokens x 2 vectors or 2 x 4.
  int64_t t = 0;
  if (mp <= 2 * kLanes<A>)
    for (; t + 4 <= tb; t += 4) gather_tokens<A, 4>(mag + t * d, off + t * d, d, m, ob + t * mp, mp);
  for (; t + 2 <= tb; t += 2) gather_tokens<A, 2>(mag + t * d, off + t * d, d, m, ob + t * mp, mp);
  for (; t < tb; ++t) gather_tokens<A, 1>(mag + t * d, off + t * d, d, m, ob + t * mp, mp);
}

} // namespace pola::kernels::simd::pola_detail
