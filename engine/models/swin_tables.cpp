#include "engine/models/swin_tables.h"

namespace pola::models {

std::vector<float> expand_relative_bias(const float *table, int64_t table_window, int64_t window_h,
                                        int64_t window_w, int64_t heads) {
  const int64_t t = window_h * window_w, W = table_window, side = 2 * W - 1;
  std::vector<float> bias(heads * t * t);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < t; ++j) {
      const int64_t dy = i / window_w - j / window_w, dx = i % window_w - j % window_w;
      const int64_t idx = (dy + W - 1) * side + (dx + W - 1);
      for (int64_t h = 0; h < heads; ++h) bias[(h * t + i) * t + j] = table[idx * heads + h];
    }
  return bias;
}

namespace {
// Region label along one axis: [0, res-w) -> 0, [res-w, res-s) -> 1, [res-s, res) -> 2.
int region(int64_t p, int64_t res, int64_t w, int64_t s) { return p < res - w ? 0 : (p < res - s ? 1 : 2); }
} // namespace

std::vector<float> shifted_window_mask(int64_t height, int64_t width, int64_t w, int64_t s) {
  const int64_t per_row = width / w, windows = (height / w) * per_row, t = w * w;
  std::vector<float> mask(windows * t * t, 0.f);
  for (int64_t win = 0; win < windows; ++win) {
    const int64_t y0 = (win / per_row) * w, x0 = (win % per_row) * w;
    for (int64_t i = 0; i < t; ++i) {
      const int li = region(y0 + i / w, height, w, s) * 3 + region(x0 + i % w, width, w, s);
      for (int64_t j = 0; j < t; ++j) {
        const int lj = region(y0 + j / w, height, w, s) * 3 + region(x0 + j % w, width, w, s);
        if (li != lj) mask[(win * t + i) * t + j] = -100.f;
      }
    }
  }
  return mask;
}

} // namespace pola::models
