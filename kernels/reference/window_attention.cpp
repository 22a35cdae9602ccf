// Swin window attention (SPEC section 5, "S" blocks), scalar: per window and
// head, softmax((q * scale) k^T + bias[h] + mask[w % n_mask]) @ v.
#include "kernels/reference/reference.h"

#include <cmath>
#include <vector>

namespace pola::kernels::reference {

void window_attention(const WindowAttnArgs &a) {
  const int t = a.tokens, d = a.head_dim;
  const int64_t width = int64_t(a.heads) * d;
  const int64_t items = a.windows * a.heads;
#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1 && items > 1) schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t w = item / a.heads;
    const int h = int(item % a.heads);
    const float *base = a.qkv + w * t * a.ld_qkv;
    const float *mask = a.mask ? a.mask + (w % a.n_mask) * t * t : nullptr;
    std::vector<float> s(t);
    for (int i = 0; i < t; ++i) {
      const float *q = base + i * a.ld_qkv + int64_t(h) * d;
      float mx = -INFINITY;
      for (int j = 0; j < t; ++j) {
        const float *k = base + j * a.ld_qkv + width + int64_t(h) * d;
        float dot = 0.0f;
        for (int c = 0; c < d; ++c) dot += (q[c] * a.scale) * k[c];
        dot += a.bias[(int64_t(h) * t + i) * t + j];
        if (mask) dot += mask[int64_t(i) * t + j];
        s[j] = dot;
        mx = std::fmax(mx, dot);
      }
      float sum = 0.0f;
      for (int j = 0; j < t; ++j) {
        s[j] = std::exp(s[j] - mx);
        sum += s[j];
      }
      const float inv = 1.0f / sum;
      float *o = a.out + (w * t + i) * a.ld_out + int64_t(h) * d;
      for (int c = 0; c < d; ++c) {
        float acc = 0.0f;
        for (int j = 0; j < t; ++j) acc += s[j] * base[j * a.ld_qkv + 2 * width + int64_t(h) * d + c];
        o[c] = acc * inv;
      }
    }
  }
}

} // namespace pola::kernels::reference
