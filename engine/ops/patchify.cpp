#include "engine/ops/patchify.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::ops {
namespace {

inline void convert(float from, float &to) { to = from; }
inline void convert(float from, uint16_t &to) { to = kernels::bf16_rne(from); }
inline void convert(uint16_t from, uint16_t &to) { to = from; }
inline void convert(uint16_t from, float &to) {
  const uint32_t u = uint32_t(from) << 16;
  std::memcpy(&to, &u, 4);
}

// One NHWC patch: its P x P pixels are P * P runs of C values, and the row
// holds them interleaved, (c, ky, kx). Writing the row in order from P * P
// read streams, with P known to the compiler, is several times faster than
// one pixel at a time with stores P * P apart (figures: bench/peers/README.md).
template <int P, class In, class Out> void interleave_patch(const In *top, int64_t W, int64_t C, Out *out) {
  const In *pix[P * P];
  for (int ky = 0; ky < P; ++ky)
    for (int kx = 0; kx < P; ++kx) pix[ky * P + kx] = top + (ky * W + kx) * C;
  for (int64_t c = 0; c < C; ++c)
    for (int i = 0; i < P * P; ++i) convert(pix[i][c], out[c * P * P + i]);
}

template <class In, class Out> void patchify_as(const PatchGrid &g, const In *src, Out *dst, int threads) {
  const int64_t oh = g.out_h(), ow = g.out_w(), p = g.patch, C = g.channels, H = g.height, W = g.width;
  const int64_t rows = g.batch * oh * ow, width = g.row_width();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / (oh * ow), y = (r / ow) % oh, x = r % ow;
    Out *out = dst + r * width;
    if (g.nchw) {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t ky = 0; ky < p; ++ky) {
          const In *line = src + ((b * C + c) * H + y * p + ky) * W + x * p;
          Out *to = out + (c * p + ky) * p;
          if constexpr (std::is_same_v<In, Out>) std::memcpy(to, line, sizeof(In) * p);
          else for (int64_t kx = 0; kx < p; ++kx) convert(line[kx], to[kx]);
        }
    } else {
      const In *top = src + ((b * H + y * p) * W + x * p) * C;
      if (p == 2) interleave_patch<2>(top, W, C, out);
      else if (p == 4) interleave_patch<4>(top, W, C, out);
      else if (p == 8) interleave_patch<8>(top, W, C, out);
      else {
        for (int64_t ky = 0; ky < p; ++ky)
          for (int64_t kx = 0; kx < p; ++kx) {
            const In *pix = top + (ky * W + kx) * C;
            for (int64_t c = 0; c < C; ++c) convert(pix[c], out[(c * p + ky) * p + kx]);
          }
      }
    }
  }
}

} // namespace

void patchify(const PatchGrid &g, const float *src, float *dst, int threads) { patchify_as(g, src, dst, threads); }

void patchify(const PatchGrid &g, const void *src, bool src_bf16, void *dst, bool dst_bf16, int threads) {
  if (src_bf16 && dst_bf16)
    patchify_as(g, static_cast<const uint16_t *>(src), static_cast<uint16_t *>(dst), threads);
  else if (src_bf16)
    patchify_as(g, static_cast<const uint16_t *>(src), static_cast<float *>(dst), threads);
  else if (dst_bf16)
    patchify_as(g, static_cast<const float *>(src), static_cast<uint16_t *>(dst), threads);
  else
    patchify_as(g, static_cast<const float *>(src), static_cast<float *>(dst), threads);
}

} // namespace pola::ops
