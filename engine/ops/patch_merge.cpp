#include "engine/ops/patch_merge.h"

#include <cstring>

namespace pola::ops {

void patch_merge_gather(const float *src, float *dst, int64_t batch, int64_t height, int64_t width,
                        int64_t channels, int threads) {
  const int64_t oh = height / 2, ow = width / 2, c = channels;
  // (dy, dx) of each quadrant, in concatenation order.
  static const int kDy[4] = {0, 1, 0, 1}, kDx[4] = {0, 0, 1, 1};
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < batch * oh * ow; ++r) {
    int64_t b = r / (oh * ow), y = (r / ow) % oh, x = r % ow;
    for (int q = 0; q < 4; ++q) {
      int64_t sy = 2 * y + kDy[q], sx = 2 * x + kDx[q];
      std::memcpy(dst + r * 4 * c + q * c, src + ((b * height + sy) * width + sx) * c, sizeof(float) * c);
    }
  }
}

} // namespace pola::ops
