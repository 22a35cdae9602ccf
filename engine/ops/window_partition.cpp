#include "engine/ops/window_partition.h"

#include <cstring>

namespace pola::ops {
namespace {

// Row index in the (B, H, W) image of window token `t` (window-major).
inline int64_t source_row(const WindowGrid &g, int64_t t) {
  const int64_t w = g.window, per_win = w * w;
  const int64_t wins_x = g.width / w, wins_per_img = (g.height / w) * wins_x;
  int64_t win = t / per_win, in = t % per_win;
  int64_t b = win / wins_per_img, wi = win % wins_per_img;
  int64_t y = (wi / wins_x) * w + in / w, x = (wi % wins_x) * w + in % w;
  y = (y + g.shift) % g.height;
  x = (x + g.shift) % g.width;
  return (b * g.height + y) * g.width + x;
}

} // namespace

void window_partition(const WindowGrid &g, const float *src, float *dst, int threads) {
  const int64_t rows = g.batch * g.height * g.width, c = g.channels;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < rows; ++t)
    std::memcpy(dst + t * c, src + source_row(g, t) * c, sizeof(float) * c);
}

void window_reverse_add(const WindowGrid &g, const float *src, float *dst, int threads) {
  const int64_t rows = g.batch * g.height * g.width, c = g.channels;
  // Each destination row receives exactly one source row, so rows are independent.
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < rows; ++t) {
    float *d = dst + source_row(g, t) * c;
    const float *s = src + t * c;
    for (int64_t i = 0; i < c; ++i) d[i] += s[i];
  }
}

} // namespace pola::ops
