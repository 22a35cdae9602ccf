// Float rows -> bf16 rows (round to nearest even): the source of a bf16 GEMM.
// Integer work on the bits; the loop is left to the compiler, which vectorises
// it with the instructions of the ISA this template is compiled for.
#pragma once

#include <cstdint>

#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels::simd {

template <class A>
void to_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows * cols > 16384) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * ld_x;
    uint16_t *yr = y + r * ld_y;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = bf16_rne(xr[c]);
  }
}

} // namespace pola::kernels::simd
