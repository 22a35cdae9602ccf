// Float -> bf16 (round to nearest even) over strided rows.
#include "kernels/reference/reference.h"
#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels::reference {

void to_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * ld_y + c] = bf16_rne(x[r * ld_x + c]);
}

} // namespace pola::kernels::reference
