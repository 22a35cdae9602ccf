// A register-tiled dense product, C += A B, for small matrices that live in
// cache: the inner loop of the polarity core's dense (RoPE) passes. A tile
// holds R rows x V vectors of C in registers over the whole sum; A is read by
// scalar broadcasts with arbitrary strides (so A may be stored transposed)
// and B by aligned vector loads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

// Column vectors per tile, and rows for V of them: R x V accumulators, V
// operands of B and a broadcast must fit the register file (one spare). The
// cap of 12 rows bounds the general registers a strided A needs (one offset
// per row); a cap of 8 measured the same on the polarity passes.
constexpr int kDenseMaxVecs = 4;
template <class A, int V> constexpr int kDenseRows = std::min(12, (kRegisters<A> - 2 - V) / V);

// acc[i][v] += sum_k a[i * si + k * sk] * b[k * ldb + v * L], k in [0, K),
// each sum in order of k (so a row's result does not depend on R).
template <class A, int R, int V>
inline void dense_tile(const float *a, int64_t si, int64_t sk, const float *b, int64_t ldb, int64_t K,
                       Vec<A> (&acc)[R][V]) {
  constexpr int L = kLanes<A>;
  for (int64_t k = 0; k < K; ++k) {
    const float *ak = a + k * sk;
    const float *bk = b + k * ldb;
    Vec<A> bv[V];
    for (int v = 0; v < V; ++v) bv[v] = Vec<A>::load_aligned(bk + v * L);
    for (int i = 0; i < R; ++i) {
      const Vec<A> x(ak[i * si]);
      for (int v = 0; v < V; ++v) acc[i][v] = xsimd::fma(x, bv[v], acc[i][v]);
    }
  }
}

// Covers a rows x nvec (vectors) grid of C with tiles: tile(R, V, r0, col)
// gets R and V as std::integral_constant, the first row and the first column
// (in floats). Full tiles of kDenseRows rows, then one shorter tile per
// column group.
template <class A, class F> inline void for_each_dense_tile(int64_t rows, int nvec, F &&tile) {
  for (int v0 = 0; v0 < nvec; v0 += kDenseMaxVecs) {
    with_width<kDenseMaxVecs>(std::min(kDenseMaxVecs, nvec - v0), [&](auto w) {
      constexpr int R = kDenseRows<A, decltype(w)::value>;
      const int64_t col = int64_t(v0) * kLanes<A>;
      int64_t r0 = 0;
      for (; r0 + R <= rows; r0 += R) tile(std::integral_constant<int, R>{}, w, r0, col);
      if constexpr (R > 1)
        if (r0 < rows) with_width<R - 1>(int(rows - r0), [&](auto r) { tile(r, w, r0, col); });
    });
  }
}

} // namespace pola::kernels::simd
