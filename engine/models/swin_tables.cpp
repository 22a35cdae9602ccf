#include "engine/models/swin_tables.h"

namespace pola::models {

std::vector<float> expand_relative_bias(const float *table, int64_t w, int64_t heads) {
  const int64_t t = w * w, side = 2 * w - 1;
  std::vector<float> bias(heads * t * t);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < t; ++j) {
      int64_t dy = i / w - j / w, dx = i % w - j % w;
      int64_t idx = (dy + w - 1) * side + (dx + w - 1);
      for (int64_t h = 0; h < heads; ++h) bias[(h * t + i) * t + j] = table[idx * heads + h];
    }
  return bias;
}

namespace {
// Region label along one axis: [0, res-w) -> 0, [res-w, res-s) -> 1, [res-s, res) -> 2.
int region(int64_t p, int64_t res, int64_t w, int64_t s) { return p < res - w ? 0 : (p < res - s ? 1 : 2); }
} // namespace

std::vector<float> shifted_window_mask(int64_t res, int64_t w, int64_t s) {
  const int64_t per_side = res / w, windows = per_side * per_side, t = w * w;
  std::vector<float> mask(windows * t * t, 0.f);
  for (int64_t win = 0; win < windows; ++win) {
    int64_t y0 = (win / per_side) * w, x0 = (win % per_side) * w;
    for (int64_t i = 0; i < t; ++i) {
      int li = region(y0 + i / w, res, w, s) * 3 + region(x0 + i % w, res, w, s);
      for (int64_t j = 0; j < t; ++j) {
        int lj = region(y0 + j / w, res, w, s) * 3 + region(x0 + j % w, res, w, s);
        if (li != lj) mask[(win * t + i) * t + j] = -100.f;
      }
    }
  }
  return mask;
}

} // namespace pola::models
