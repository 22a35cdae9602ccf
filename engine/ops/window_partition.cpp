#include "engine/ops/window_partition.h"

#include <cstring>

namespace pola::ops {
namespace {

// Row index in the (B, H, W) image of window token `t` (window-major), or -1
// for a padding token.
inline int64_t source_row(const WindowGrid &g, int64_t t) {
  const int64_t w = g.window, per_win = w * w, ph = g.padded_h(), pw = g.padded_w();
  const int64_t wins_x = pw / w, wins_per_img = (ph / w) * wins_x;
  int64_t win = t / per_win, in = t % per_win;
  int64_t b = win / wins_per_img, wi = win % wins_per_img;
  int64_t y = (wi / wins_x) * w + in / w, x = (wi % wins_x) * w + in % w;
  y = (y + g.shift) % ph;
  x = (x + g.shift) % pw;
  if (y >= g.height || x >= g.width) return -1;
  return (b * g.height + y) * g.width + x;
}

template <class T> void partition_rows(const WindowGrid &g, const T *src, T *dst, int threads) {
  const int64_t rows = g.window_rows(), c = g.channels;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t from = source_row(g, t);
    if (from < 0) std::memset(dst + t * c, 0, sizeof(T) * c);
    else std::memcpy(dst + t * c, src + from * c, sizeof(T) * c);
  }
}

} // namespace

void window_partition(const WindowGrid &g, const float *src, float *dst, int threads) {
  partition_rows(g, src, dst, threads);
}

void window_partition(const WindowGrid &g, const uint16_t *src, uint16_t *dst, int threads) {
  partition_rows(g, src, dst, threads);
}

void window_reverse_add(const WindowGrid &g, const float *src, float *dst, int threads) {
  const int64_t rows = g.window_rows(), c = g.channels;
  // Each destination row receives at most one source row, so rows are independent.
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t to = source_row(g, t);
    if (to < 0) continue;
    float *d = dst + to * c;
    const float *s = src + t * c;
    for (int64_t i = 0; i < c; ++i) d[i] += s[i];
  }
}

} // namespace pola::ops
