#include "engine/preprocess/center_crop.h"

#include <cstring>
#include <stdexcept>

namespace pola::preprocess {

int center_crop_offset(int size, int crop) {
  const int diff = size - crop;
  const int half = diff / 2;
  // diff odd: (diff / 2.0) ends in .5; round half to even.
  if (diff % 2 != 0 && half % 2 != 0) return half + 1;
  return half;
}

ImageU8 center_crop(const ImageU8 &src, int crop_width, int crop_height) {
  if (crop_width <= 0 || crop_height <= 0 || crop_width > src.width || crop_height > src.height)
    throw std::invalid_argument("center_crop: crop " + std::to_string(crop_width) + "x" + std::to_string(crop_height) +
                                " does not fit in a " + std::to_string(src.width) + "x" +
                                std::to_string(src.height) + " image");
  const int top = center_crop_offset(src.height, crop_height);
  const int left = center_crop_offset(src.width, crop_width);
  ImageU8 out(crop_width, crop_height, src.channels);
  const size_t bytes = size_t(crop_width) * src.channels;
  for (int y = 0; y < crop_height; ++y)
    std::memcpy(out.row(y), src.row(top + y) + size_t(left) * src.channels, bytes);
  return out;
}

} // namespace pola::preprocess
