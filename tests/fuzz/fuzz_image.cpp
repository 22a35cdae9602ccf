// Fuzz target: image decoding (stb_image, our PNM and GIF helpers) and the
// PIL-matching preprocessing chain (bicubic resize, center crop, normalize),
// in RGB and grey. The resize and crop sizes are derived from the input's
// length so the seeds stay plain image files.
#include <cstdint>
#include <cstdlib>

#include "engine/preprocess/preprocess.h"
#include "weights/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace pola::preprocess;
  // Smaller than the CLI's limits so that one input costs milliseconds; the
  // checks are the same code.
  DecodeLimits limits;
  limits.max_side = 4096;
  limits.max_pixels = 4'000'000;
  ImageU8 rgb;
  try {
    rgb = decode_image_from_memory(data, size, "fuzz", 3, limits);
  } catch (const pola::InputError &) {
    return 0;
  }
  if (rgb.channels != 3 || rgb.pixels.size() != size_t(rgb.width) * rgb.height * 3) std::abort();

  PreprocessSpec spec;
  spec.resize = 1 + static_cast<int>(size % 37);
  spec.crop = spec.input_size = 1 + static_cast<int>((size / 37) % spec.resize);
  std::vector<float> x = preprocess_image(rgb, spec);
  if (x.size() != size_t(3) * spec.crop * spec.crop) std::abort();

  spec.channels = 1;
  spec.mean = {0.449f};
  spec.std = {0.226f};
  x = preprocess_image(rgb_to_grey(rgb), spec);
  if (x.size() != size_t(spec.crop) * spec.crop) std::abort();
  return 0;
}
