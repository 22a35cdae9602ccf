// Depthwise k x k convolution, stride 1, zero padding k/2 (DepthwiseConvArgs),
// scalar: each output summed in double over the taps that land in the image.
#include <cstdint>

#include "kernels/reference/reference.h"
#include "kernels/refuse.h"
#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels::reference {

void depthwise_conv(const DepthwiseConvArgs &a) {
  if (a.kernel <= 0 || a.kernel % 2 == 0) refuse("depthwise_conv", "the kernel size must be odd and positive");
  if (a.dst_bf16 && a.accumulate) refuse("depthwise_conv", "dst_bf16 cannot accumulate");
  const int64_t k = a.kernel, pad = k / 2, H = a.height, W = a.width, rows = a.batch * a.height;
#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / H, y = r % H;
    for (int64_t x = 0; x < W; ++x) {
      const int64_t pixel = (b * H + y) * W + x;
      for (int64_t c = 0; c < a.channels; ++c) {
        double acc = a.bias ? a.bias[c] : 0.0;
        for (int64_t dy = 0; dy < k; ++dy)
          for (int64_t dx = 0; dx < k; ++dx) {
            const int64_t yy = y + dy - pad, xx = x + dx - pad;
            if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
            acc += double(a.weight[c * k * k + dy * k + dx]) * a.src[((b * H + yy) * W + xx) * a.ld_src + c];
          }
        if (a.add_src) acc += a.src[pixel * a.ld_src + c];
        if (a.dst_bf16) {
          a.dst_bf16[pixel * a.ld_dst + c] = bf16_rne(float(acc));
          continue;
        }
        float *d = a.dst + pixel * a.ld_dst + c;
        if (a.accumulate) acc += *d;
        *d = float(acc);
      }
    }
  }
}

} // namespace pola::kernels::reference
