// The whole preprocessing chain; see preprocess.h for the reference it mirrors.
#include "engine/preprocess/preprocess.h"

#include "weights/error.h"

namespace pola::preprocess {

std::vector<float> preprocess_image(const ImageU8 &img, const PreprocessSpec &spec) {
  spec.validate();
  if (img.channels != spec.channels)
    throw InputError("preprocess: image has " + std::to_string(img.channels) + " channels, spec wants " +
                     std::to_string(spec.channels));
  const ImageU8 resized = resize_bicubic_u8(img, spec.resize, spec.resize);
  const ImageU8 cropped = spec.crop == spec.resize ? resized : center_crop(resized, spec.crop, spec.crop);
  return normalize(cropped, spec.mean, spec.std);
}

std::vector<float> load_and_preprocess(const std::string &path, const PreprocessSpec &spec) {
  spec.validate(); // before decoding: a bad spec should not cost a decode
  return preprocess_image(decode_image(path, spec.channels), spec);
}

} // namespace pola::preprocess
