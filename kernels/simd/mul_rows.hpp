// y[r, :] *= g[r, :] over strided rows: the PolaFormer gate (SPEC 3.9).
#pragma once

#include <cstdint>

#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

template <class A>
void mul_rows(float *y, int64_t ld_y, const float *g, int64_t ld_g, int64_t rows, int64_t cols,
              int threads) {
  constexpr int L = kLanes<A>;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    float *yr = y + r * ld_y;
    const float *gr = g + r * ld_g;
    int64_t c = 0;
    for (; c + L <= cols; c += L)
      (Vec<A>::load_unaligned(yr + c) * Vec<A>::load_unaligned(gr + c)).store_unaligned(yr + c);
    if (c < cols) {
      const int n = int(cols - c);
      store_first<A>(yr + c, load_first<A>(yr + c, n) * load_first<A>(gr + c, n), n);
    }
  }
}

} // namespace pola::kernels::simd
