#include "engine/ops/token_ops.h"

#include <algorithm>
#include <vector>

namespace pola::ops {

void add_broadcast_rows(float *x, const float *add, int64_t batch, int64_t tokens, int64_t channels,
                        int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < batch * tokens; ++r) {
    float *row = x + r * channels;
    const float *a = add + (r % tokens) * channels;
    for (int64_t c = 0; c < channels; ++c) row[c] += a[c];
  }
}

void mean_over_tokens(const float *src, float *dst, int64_t batch, int64_t tokens, int64_t channels) {
  // Accumulate in double: stage-4 token counts are small, but the sum should
  // not depend on token order more than necessary.
  std::vector<double> acc(channels);
  for (int64_t b = 0; b < batch; ++b) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t n = 0; n < tokens; ++n) {
      const float *row = src + (b * tokens + n) * channels;
      for (int64_t c = 0; c < channels; ++c) acc[c] += row[c];
    }
    for (int64_t c = 0; c < channels; ++c) dst[b * channels + c] = static_cast<float>(acc[c] / tokens);
  }
}

void interpolate_tokens(const float *src, float *dst, int64_t batch, int64_t n_in, int64_t n_out,
                        int64_t channels, int threads) {
  const double scale = static_cast<double>(n_in) / static_cast<double>(n_out);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < batch * n_out; ++r) {
    int64_t b = r / n_out, i = r % n_out;
    // Source coordinate of output sample i with half-pixel centres, clamped at 0.
    double s = std::max(0.0, (i + 0.5) * scale - 0.5);
    int64_t i0 = std::min<int64_t>(static_cast<int64_t>(s), n_in - 1);
    int64_t i1 = std::min<int64_t>(i0 + 1, n_in - 1);
    float l1 = static_cast<float>(s - i0), l0 = 1.f - l1;
    const float *a = src + (b * n_in + i0) * channels, *c1 = src + (b * n_in + i1) * channels;
    float *d = dst + r * channels;
    for (int64_t c = 0; c < channels; ++c) d[c] = l0 * a[c] + l1 * c1[c];
  }
}

} // namespace pola::ops
