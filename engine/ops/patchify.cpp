#include "engine/ops/patchify.h"

#include <cstring>

namespace pola::ops {

void patchify(const PatchGrid &g, const float *src, float *dst, int threads) {
  const int64_t oh = g.out_h(), ow = g.out_w(), p = g.patch, C = g.channels, H = g.height, W = g.width;
  const int64_t rows = g.batch * oh * ow, width = g.row_width();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / (oh * ow), y = (r / ow) % oh, x = r % ow;
    float *out = dst + r * width;
    if (g.nchw) {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t ky = 0; ky < p; ++ky)
          std::memcpy(out + (c * p + ky) * p, src + ((b * C + c) * H + y * p + ky) * W + x * p, sizeof(float) * p);
    } else {
      for (int64_t ky = 0; ky < p; ++ky)
        for (int64_t kx = 0; kx < p; ++kx) {
          const float *pix = src + ((b * H + y * p + ky) * W + x * p + kx) * C;
          for (int64_t c = 0; c < C; ++c) out[(c * p + ky) * p + kx] = pix[c];
        }
    }
  }
}

} // namespace pola::ops
