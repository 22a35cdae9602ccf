#include "engine/preprocess/resize_bicubic_u8.h"

#include <stdexcept>

#include "engine/preprocess/resample_weights.h"

namespace pola::preprocess {
namespace {

// Accumulators start at one half (in fixed point) so the shift rounds to
// nearest; negative sums (cubic overshoot below 0) clip to 0, large ones to 255.
constexpr int32_t kHalf = 1 << (kResamplePrecisionBits - 1);

inline uint8_t clip_fixed_to_u8(int32_t acc) {
  if (acc < 0) return 0;
  const int32_t v = acc >> kResamplePrecisionBits;
  return v > 255 ? 255 : static_cast<uint8_t>(v);
}

ImageU8 resize_rows(const ImageU8 &src, int out_width, const ResampleFilter &filter) {
  const ResampleWeights rw = make_resample_weights(src.width, out_width, filter);
  const int c = src.channels;
  ImageU8 out(out_width, src.height, c);
  for (int y = 0; y < src.height; ++y) {
    const uint8_t *in = src.row(y);
    uint8_t *o = out.row(y);
    for (int x = 0; x < out_width; ++x) {
      const int32_t *k = &rw.coeffs[size_t(x) * rw.taps];
      const uint8_t *p = in + size_t(rw.first[x]) * c;
      for (int ch = 0; ch < c; ++ch) {
        int32_t acc = kHalf;
        for (int j = 0; j < rw.count[x]; ++j) acc += p[j * c + ch] * k[j];
        o[x * c + ch] = clip_fixed_to_u8(acc);
      }
    }
  }
  return out;
}

ImageU8 resize_columns(const ImageU8 &src, int out_height, const ResampleFilter &filter) {
  const ResampleWeights rw = make_resample_weights(src.height, out_height, filter);
  const size_t row_len = size_t(src.width) * src.channels;
  ImageU8 out(src.width, out_height, src.channels);
  std::vector<int32_t> acc(row_len);
  for (int y = 0; y < out_height; ++y) {
    // Whole rows at a time: contiguous, so the compiler can vectorize it.
    acc.assign(row_len, kHalf);
    const int32_t *k = &rw.coeffs[size_t(y) * rw.taps];
    for (int j = 0; j < rw.count[y]; ++j) {
      const uint8_t *in = src.row(rw.first[y] + j);
      const int32_t kj = k[j];
      for (size_t i = 0; i < row_len; ++i) acc[i] += in[i] * kj;
    }
    uint8_t *o = out.row(y);
    for (size_t i = 0; i < row_len; ++i) o[i] = clip_fixed_to_u8(acc[i]);
  }
  return out;
}

} // namespace

ImageU8 resize_u8(const ImageU8 &src, int out_width, int out_height, const ResampleFilter &filter) {
  if (src.width <= 0 || src.height <= 0 || out_width <= 0 || out_height <= 0)
    throw std::invalid_argument("resize_u8: sizes must be positive");
  // An axis whose size does not change is an identity for every filter here
  // (weights at integer offsets are 1, 0, 0...), so PIL skips it; so do we.
  ImageU8 horizontal = out_width == src.width ? src : resize_rows(src, out_width, filter);
  return out_height == src.height ? horizontal : resize_columns(horizontal, out_height, filter);
}

} // namespace pola::preprocess
