// Exact GELU, erf form (SPEC section 2): 0.5 x (1 + erf(x / sqrt 2)).
#include "kernels/reference/reference.h"

#include <cmath>

namespace pola::kernels::reference {

void gelu(float *x, int64_t n, int threads) {
  const float inv_sqrt2 = 0.70710678118654752440f;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && n > 4096) schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt2));
}

} // namespace pola::kernels::reference
