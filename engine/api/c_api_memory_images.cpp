// Preprocessing images from files, encoded bytes (servers hold request
// bodies) or decoded pixels (bindings hold arrays), and the model's JSON
// self-description.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/preprocess/convert_channels.h"
#include "engine/preprocess/decode_image.h"
#include "engine/preprocess/preprocess.h"
#include "engine/preprocess/preprocess_batch.h"
#include "guarded_call.h"
#include "last_error.h"
#include "model_handle.h"
#include "weights/model_summary.h"

using pola::api::guarded_call;
using pola::api::image_spec_of;
using pola::api::require;

namespace {

// Decoded 8-bit pixels as an image of the model's channels (PIL's convert), after checking the size.
pola::preprocess::ImageU8 pixels_image(const unsigned char *pixels, int height, int width, int channels, int wanted) {
  if (channels < 1 || channels > 4)
    throw pola::InputError("channels must be 1 (grey), 2 (grey+alpha), 3 (RGB) or 4 (RGBA)");
  const pola::preprocess::DecodeLimits limits;
  if (height < 1 || width < 1 || height > limits.max_side || width > limits.max_side ||
      static_cast<int64_t>(height) * width > limits.max_pixels)
    throw pola::InputError("image size " + std::to_string(height) + " x " + std::to_string(width) +
                           " is outside 1.." + std::to_string(limits.max_side) + " per side and " +
                           std::to_string(limits.max_pixels) + " pixels");
  pola::preprocess::ImageU8 img(width, height, channels);
  std::copy(pixels, pixels + img.pixels.size(), img.pixels.begin());
  return pola::preprocess::convert_channels(img, wanted);
}

// Image `i` of a pola_model_preprocess_batch call, decoded to the model's channels.
pola::preprocess::ImageU8 load_image(const pola_image &image, int channels) {
  if (image.path) return pola::preprocess::decode_image(image.path, channels);
  if (image.data) {
    require(image.size > 0, "image bytes: empty (0 bytes), not an image file");
    return pola::preprocess::decode_image_from_memory(static_cast<const uint8_t *>(image.data), image.size,
                                                      "image bytes", channels);
  }
  require(image.pixels != nullptr, "an image has neither path, data nor pixels");
  return pixels_image(image.pixels, image.height, image.width, image.channels, channels);
}

} // namespace

extern "C" {

POLA_API pola_status pola_model_preprocess_batch(const pola_model *model, const pola_image *images, int count,
                                                 float *out, int *failed) {
  if (failed) *failed = -1;
  return guarded_call("pola_model_preprocess_batch", [&] {
    require(model && images && out, "model, images and out must not be NULL");
    if (count < 0) throw pola::InputError("count must be >= 0, got " + std::to_string(count));
    const auto &spec = image_spec_of(model);
    pola::preprocess::preprocess_batch(
        count, [&](int i) { return load_image(images[i], spec.channels); }, spec, model->model->threads(), out,
        failed);
  });
}

POLA_API const char *pola_model_info_json(const pola_model *model) {
  if (!model) {
    pola::api::set_last_error("pola_model_info_json", "model must not be NULL");
    return nullptr;
  }
  const pola_status status = guarded_call("pola_model_info_json", [&] {
    std::call_once(model->info_once,
                   [&] { model->info_json = pola::weights::model_summary(model->model->file()).dump(); });
  });
  return status == POLA_OK ? model->info_json.c_str() : nullptr;
}

} // extern "C"
