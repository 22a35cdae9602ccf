// Query-side product q_sim @ M for heads whose output row fits in 8
// accumulators and whose M fits in L1 (gather_fits: d <= 64 with a 32 KB
// or larger L1d). Each token's output stays in registers and, per channel j, the
// row of M its sign selects (j or d + j) is loaded and accumulated: no
// branch on the signs at all, where a sign-pattern band pays a loop exit the
// predictor cannot learn per pattern, and a load and store of the output
// per token and band. (First for narrow heads, where a band does only a few
// FMAs per token between its loop exits; since 2026-12-02 up to d = 64.)
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

// 8 accumulators hide the FMA latency: 4 tokens x 2 vectors, 2 x 4 or 1 x 8.
constexpr int kGatherAcc = 8;

// Whether a head takes this path: a token's output row (mp floats) fits in
// kGatherAcc accumulators, and M (2d rows of mp floats), whose rows each
// token reads in its own sign order, fits in this core's L1d (l1d_bytes;
// POLA_L1D_BYTES measures the rule as if on another CPU). At d = 64 the
// gather beat the bands with AVX-512 on an Intel Xeon (48 KB L1d), and with
// AVX-512 and AVX2 on AMD Zen 4 (32 KB L1d, which M then fills); at d = 128
// (M in L2) it lost, so M must stay in L1 (figures: bench/attention/README.md).
template <class A> inline bool gather_fits(int d, int64_t mp, int64_t l1d) {
  return mp <= kGatherAcc * kLanes<A> && 2 * d * mp * int64_t(sizeof(float)) <= l1d;
}

// All mp / L (<= kGatherAcc / T) vectors of T tokens.
template <class A, int T>
inline void gather_tokens(const float *mag, const int32_t *off, int d, const float *m, float *ob, int64_t mp) {
  with_width<kGatherAcc / T>(int(mp / kLanes<A>), [&](auto w) {
    gather_tile<A, T, decltype(w)::value>(mag, off, d, m, 0, ob, mp);
  });
}

// ob (tokens x mp) = q_sim @ M for tb tokens of one head.
template <class A>
inline void gather_accumulate(const float *mag, const int32_t *off, int d, const float *m, int64_t tb,
                              float *ob, int64_t mp) {
  const int64_t nvec = mp / kLanes<A>;
  int64_t t = 0;
  if (nvec <= kGatherAcc / 4)
    for (; t + 4 <= tb; t += 4) gather_tokens<A, 4>(mag + t * d, off + t * d, d, m, ob + t * mp, mp);
  if (nvec <= kGatherAcc / 2)
    for (; t + 2 <= tb; t += 2) gather_tokens<A, 2>(mag + t * d, off + t * d, d, m, ob + t * mp, mp);
  for (; t < tb; ++t) gather_tokens<A, 1>(mag + t * d, off + t * d, d, m, ob + t * mp, mp);
}

} // namespace pola::kernels::simd::pola_detail
