// An 8-bit image in memory: rows top to bottom, pixels left to right, the
// channels of one pixel adjacent (HWC, "interleaved"), like PIL's RGB and L.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pola::preprocess {

struct ImageU8 {
  int width = 0;
  int height = 0;
  int channels = 0; // 1 (grey, PIL mode L) or 3 (RGB)
  std::vector<uint8_t> pixels; // height * width * channels bytes

  ImageU8() = default;
  ImageU8(int w, int h, int c) : width(w), height(h), channels(c), pixels(std::size_t(w) * h * c) {}
  uint8_t *row(int y) { return pixels.data() + std::size_t(y) * width * channels; }
  const uint8_t *row(int y) const { return pixels.data() + std::size_t(y) * width * channels; }
};

} // namespace pola::preprocess
