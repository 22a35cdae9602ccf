#include "engine/preprocess/convert_channels.h"

#include <string>

#include "engine/preprocess/rgb_to_grey.h"
#include "weights/error.h"

namespace pola::preprocess {

namespace {

// Keeps the colour channels of each pixel (1 or 3 of `img.channels`), so
// LA -> L and RGBA -> RGB, replicating grey when `out_channels` is 3.
ImageU8 take_colour(const ImageU8 &img, int colour, int out_channels) {
  ImageU8 out(img.width, img.height, out_channels);
  const size_t n = static_cast<size_t>(img.width) * static_cast<size_t>(img.height);
  const uint8_t *src = img.pixels.data();
  uint8_t *dst = out.pixels.data();
  for (size_t i = 0; i < n; ++i, src += img.channels, dst += out_channels)
    for (int c = 0; c < out_channels; ++c) dst[c] = src[colour == 1 ? 0 : c];
  return out;
}

} // namespace

ImageU8 convert_channels(const ImageU8 &img, int channels) {
  if (channels != 1 && channels != 3)
    throw InputError("convert_channels: can only convert to 1 (grey) or 3 (RGB) channels, not " +
                     std::to_string(channels));
  if (img.channels < 1 || img.channels > 4)
    throw InputError("image has " + std::to_string(img.channels) +
                     " channels; expected 1 (grey), 2 (grey+alpha), 3 (RGB) or 4 (RGBA)");
  const int colour = img.channels <= 2 ? 1 : 3;
  if (img.channels == channels) return img;
  if (colour == 3 && channels == 1) return rgb_to_grey(img.channels == 3 ? img : take_colour(img, 3, 3));
  return take_colour(img, colour, channels);
}

} // namespace pola::preprocess
