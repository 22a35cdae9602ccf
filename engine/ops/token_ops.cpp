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

namespace {

// Output sample i of a linear resize from n_in to n_out samples with half-pixel
// centres (align_corners=False): the two source samples and the second's weight.
struct LinearTap {
  int64_t i0, i1;
  float l1;
};

LinearTap linear_tap(int64_t i, int64_t n_in, int64_t n_out) {
  const double scale = static_cast<double>(n_in) / static_cast<double>(n_out);
  const double s = std::max(0.0, (i + 0.5) * scale - 0.5);  // clamped at 0 as PyTorch does
  const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(s), n_in - 1);
  return {i0, std::min<int64_t>(i0 + 1, n_in - 1), static_cast<float>(s - static_cast<double>(i0))};
}

} // namespace

void interpolate_tokens(const float *src, float *dst, int64_t batch, int64_t n_in, int64_t n_out,
                        int64_t channels, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < batch * n_out; ++r) {
    const int64_t b = r / n_out;
    const LinearTap t = linear_tap(r % n_out, n_in, n_out);
    const float l0 = 1.f - t.l1;
    const float *a = src + (b * n_in + t.i0) * channels, *c1 = src + (b * n_in + t.i1) * channels;
    float *d = dst + r * channels;
    for (int64_t c = 0; c < channels; ++c) d[c] = l0 * a[c] + t.l1 * c1[c];
  }
}

std::vector<float> resize_token_grid(const float *src, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w,
                                     int64_t channels) {
  std::vector<float> dst(static_cast<size_t>(out_h * out_w * channels));
  for (int64_t y = 0; y < out_h; ++y) {
    const LinearTap ty = linear_tap(y, in_h, out_h);
    for (int64_t x = 0; x < out_w; ++x) {
      const LinearTap tx = linear_tap(x, in_w, out_w);
      const float w00 = (1.f - ty.l1) * (1.f - tx.l1), w01 = (1.f - ty.l1) * tx.l1;
      const float w10 = ty.l1 * (1.f - tx.l1), w11 = ty.l1 * tx.l1;
      const float *p00 = src + (ty.i0 * in_w + tx.i0) * channels, *p01 = src + (ty.i0 * in_w + tx.i1) * channels;
      const float *p10 = src + (ty.i1 * in_w + tx.i0) * channels, *p11 = src + (ty.i1 * in_w + tx.i1) * channels;
      float *d = dst.data() + (y * out_w + x) * channels;
      for (int64_t c = 0; c < channels; ++c) d[c] = w00 * p00[c] + w01 * p01[c] + w10 * p10[c] + w11 * p11[c];
    }
  }
  return dst;
}

void image_to_rows(const float *src, float *dst, int64_t batch, int64_t channels, int64_t pixels, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static) collapse(2)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t c = 0; c < channels; ++c)
        dst[(b * pixels + p) * channels + c] = src[(b * channels + c) * pixels + p];
}

} // namespace pola::ops
