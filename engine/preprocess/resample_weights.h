// Per-output-pixel convolution weights for one axis of a PIL-compatible
// resize, already in PIL's 8-bit fixed point.
//
// PIL's algorithm (Pillow's documented resampling, "convolution with support
// scaled by the downscale factor"), restated:
//   scale   = in_size / out_size
//   fscale  = max(scale, 1)               -- antialias: widen when shrinking
//   support = filter.support * fscale
//   for output pixel i:  center = (i + 0.5) * scale
//     first = max(int(center - support + 0.5), 0)
//     last  = min(int(center + support + 0.5), in_size)      (exclusive)
//     w[j]  = filter((first + j - center + 0.5) / fscale),  j < last - first
//     w    /= sum(w)
//   fixed point: w * 2^22 rounded half away from zero, truncated to int.
// 22 = 32 - 8 - 2 fractional bits: an 8-bit pixel times a weight sum stays
// inside int32 with 2 bits of headroom for the cubic's overshoot.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/preprocess/resample_filters.h"

namespace pola::preprocess {

constexpr int kResamplePrecisionBits = 22;

struct ResampleWeights {
  int out_size = 0;
  int taps = 0;                 // stride of `coeffs` per output pixel
  std::vector<int> first;       // first source index used by output i
  std::vector<int> count;       // number of source pixels used by output i
  std::vector<int32_t> coeffs;  // out_size * taps, fixed point, zero-padded
};

ResampleWeights make_resample_weights(int in_size, int out_size, const ResampleFilter &filter);

} // namespace pola::preprocess
