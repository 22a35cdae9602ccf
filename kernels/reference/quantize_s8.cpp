// Float -> int8 with a per-tensor scale (symmetric, [-127, 127], nearest even) over strided rows.
#include <cmath>

#include "kernels/reference/reference.h"

namespace pola::kernels::reference {

void quantize_s8(const float *x, int64_t ld_x, int8_t *y, int64_t ld_y, int64_t rows, int64_t cols, float scale,
                 int threads) {
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float q = std::nearbyint(x[r * ld_x + c] / scale); // the default mode: to nearest, ties to even
      y[r * ld_y + c] = static_cast<int8_t>(q > 127.f ? 127.f : q < -127.f ? -127.f : q);
    }
}

} // namespace pola::kernels::reference
