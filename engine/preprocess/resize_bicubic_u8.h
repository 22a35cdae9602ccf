// PIL-compatible resize of an 8-bit image (Image.resize with BICUBIC, or any
// filter from resample_filters.h): separable, horizontal pass first, then
// vertical, each pass rounding and clipping to 8 bits in fixed point exactly
// as PIL does, so outputs match PIL's byte for byte on the same input pixels.
#pragma once

#include "engine/preprocess/image_u8.h"
#include "engine/preprocess/resample_filters.h"

namespace pola::preprocess {

ImageU8 resize_u8(const ImageU8 &src, int out_width, int out_height, const ResampleFilter &filter);

inline ImageU8 resize_bicubic_u8(const ImageU8 &src, int out_width, int out_height) {
  return resize_u8(src, out_width, out_height, kBicubicFilter);
}

} // namespace pola::preprocess
