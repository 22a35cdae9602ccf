// Swish (SiLU), in place: x * sigmoid(x), evaluated in double.
#include <cmath>

#include "kernels/reference/reference.h"

namespace pola::kernels::reference {

void swish(float *x, int64_t n, int threads) {
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && n > 4096) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    x[i] = float(v / (1.0 + std::exp(-v)));
  }
}

} // namespace pola::kernels::reference
