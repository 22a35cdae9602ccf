// y *= g elementwise over strided rows: the PolaFormer gate (SPEC 3.9).
#include "kernels/reference/reference.h"

namespace pola::kernels::reference {

void mul_rows(float *y, int64_t ld_y, const float *g, int64_t ld_g, int64_t rows, int64_t cols,
              int threads) {
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * ld_y + c] *= g[r * ld_g + c];
}

} // namespace pola::kernels::reference
