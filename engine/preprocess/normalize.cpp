#include "engine/preprocess/normalize.h"

#include <stdexcept>

namespace pola::preprocess {

std::vector<float> normalize(const ImageU8 &img, const std::vector<float> &mean, const std::vector<float> &std) {
  const int c = img.channels;
  if (int(mean.size()) != c || int(std.size()) != c)
    throw std::invalid_argument("normalize: mean and std need " + std::to_string(c) + " entries");
  const size_t plane = size_t(img.width) * img.height;
  std::vector<float> out(plane * c);
  for (int ch = 0; ch < c; ++ch) {
    // A 256-entry table per channel: same float32 arithmetic, done once per value.
    float lut[256];
    for (int v = 0; v < 256; ++v) lut[v] = (float(v) / 255.0f - mean[ch]) / std[ch];
    float *o = out.data() + plane * ch;
    const uint8_t *p = img.pixels.data() + ch;
    for (size_t i = 0; i < plane; ++i) o[i] = lut[p[i * c]];
  }
  return out;
}

} // namespace pola::preprocess
