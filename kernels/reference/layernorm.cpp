// LayerNorm over each row, biased variance, two passes (mean, then centred
// squares) so large offsets do not cancel catastrophically.
#include "kernels/reference/reference.h"

#include <cmath>
#include <vector>

#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels::reference {

void layernorm(const float *x, int64_t ld_x, float *y, int64_t ld_y, int64_t rows, int64_t cols,
               const float *gamma, const float *beta, float eps, int threads) {
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * ld_x;
    float *yr = y + r * ld_y;
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += xr[c];
    const double mean = sum / double(cols);
    double sq = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const double dlt = xr[c] - mean;
      sq += dlt * dlt;
    }
    const double rstd = 1.0 / std::sqrt(sq / double(cols) + double(eps));
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = float((xr[c] - mean) * rstd) * gamma[c] + beta[c];
  }
}

// Row by row through the fp32 LayerNorm, so the values are the same ones rounded.
void layernorm_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                    const float *gamma, const float *beta, float eps, int threads) {
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> row(static_cast<size_t>(cols));
    layernorm(x + r * ld_x, ld_x, row.data(), cols, 1, cols, gamma, beta, eps, 1);
    for (int64_t c = 0; c < cols; ++c) y[r * ld_y + c] = bf16_rne(row[static_cast<size_t>(c)]);
  }
}

} // namespace pola::kernels::reference
