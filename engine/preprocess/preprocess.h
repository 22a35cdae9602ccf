// Image preprocessing for PolaFormer classifiers (SPEC.md section 7, the
// `preprocess` object of weights/FORMAT.md): the engine's replica of
//
//   img = PIL.Image.open(f).convert('RGB')            # or 'L' when channels == 1
//   img = img.resize((resize, resize), Image.BICUBIC)  # square: aspect not kept
//   img = CenterCrop(crop)(img)
//   x   = Normalize(mean, std)(ToTensor()(img))        # float32, CHW
//
// Each step is its own function and file; load_and_preprocess chains them.
#pragma once

#include <string>
#include <vector>

#include "engine/preprocess/center_crop.h"
#include "engine/preprocess/decode_image.h"
#include "engine/preprocess/image_u8.h"
#include "engine/preprocess/normalize.h"
#include "engine/preprocess/resize_bicubic_u8.h"
#include "engine/preprocess/rgb_to_grey.h"

namespace pola::preprocess {

struct PreprocessSpec {
  int input_size = 224; // what the model takes; must equal crop
  int resize = 256;
  int crop = 224;
  std::vector<float> mean{0.485f, 0.456f, 0.406f};
  std::vector<float> std{0.229f, 0.224f, 0.225f};
  int channels = 3;
  std::string interpolation = "bicubic"; // the only one the reference uses

  // Parses the FORMAT.md `preprocess` JSON object; absent keys keep the
  // defaults above. Throws pola::InputError on bad JSON or a spec that
  // validate() refuses.
  static PreprocessSpec from_json(const std::string &json_text);
  // Throws pola::InputError describing the first inconsistency.
  void validate() const;
};

// Decodes `path` and applies `spec`: returns channels * crop * crop floats,
// planar (CHW). Throws pola::InputError naming the file on any bad input.
std::vector<float> load_and_preprocess(const std::string &path, const PreprocessSpec &spec);

// The same pipeline from already decoded pixels (channels must match spec).
std::vector<float> preprocess_image(const ImageU8 &img, const PreprocessSpec &spec);

} // namespace pola::preprocess
