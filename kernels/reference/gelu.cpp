// Exact GELU, erf form (SPEC section 2): 0.5 x (1 + erf(x / sqrt 2)).
#include "kernels/reference/reference.h"

#include <cmath>

#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels::reference {

void gelu(float *x, int64_t n, int threads) {
  const float inv_sqrt2 = 0.70710678118654752440f;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && n > 4096) schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt2));
}

// Row by row through the fp32 GELU, so the values are the same ones rounded.
void gelu_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = x[r * ld_x + c];
      gelu(&v, 1, 1);
      y[r * ld_y + c] = bf16_rne(v);
    }
}

} // namespace pola::kernels::reference
