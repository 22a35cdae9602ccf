#include "engine/preprocess/rgb_to_grey.h"

#include <stdexcept>

namespace pola::preprocess {

ImageU8 rgb_to_grey(const ImageU8 &rgb) {
  if (rgb.channels != 3) throw std::invalid_argument("rgb_to_grey: the image must have 3 channels");
  ImageU8 grey(rgb.width, rgb.height, 1);
  const size_t n = size_t(rgb.width) * rgb.height;
  const uint8_t *src = rgb.pixels.data();
  for (size_t i = 0; i < n; ++i, src += 3) {
    const uint32_t l = src[0] * 19595u + src[1] * 38470u + src[2] * 7471u + 0x8000u;
    grey.pixels[i] = static_cast<uint8_t>(l >> 16); // at most 255: the weights sum to 65536
  }
  return grey;
}

} // namespace pola::preprocess
