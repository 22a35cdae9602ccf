// `pola preprocess IMAGE -o X.npy`: decode and preprocess one image exactly as
// the reference pipeline does (SPEC.md section 7) and save the (1, C, H, W)
// float32 tensor, so the engine's input can be compared with PyTorch's.
#include <fstream>
#include <sstream>

#include "command.h"
#include "engine/io/npy.h"
#include "engine/preprocess/preprocess.h"
#include "weights/error.h"

namespace {

struct PreprocessArgs {
  std::string image;
  std::string output;
  int size = 224;
  int resize = 0; // 0: the default for `size`, see below
  std::string spec_json;
};

// "--spec @file.json" reads the JSON from a file, otherwise it is the JSON itself.
std::string spec_text(const std::string &arg) {
  if (arg.empty() || arg[0] != '@') return arg;
  const std::string path = arg.substr(1);
  std::ifstream in(path);
  if (!in) throw pola::InputError(path + ": cannot open the preprocess spec");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pola::preprocess::PreprocessSpec make_spec(const PreprocessArgs &a, bool size_given, bool resize_given) {
  using pola::preprocess::PreprocessSpec;
  if (!a.spec_json.empty()) {
    if (size_given || resize_given) throw pola::InputError("preprocess: --spec cannot be combined with --size/--resize");
    return PreprocessSpec::from_json(spec_text(a.spec_json));
  }
  PreprocessSpec s;
  s.input_size = s.crop = a.size;
  // SPEC.md section 7: the 224 models resize to 256 then crop 224; the 384
  // model resizes straight to 384. Other sizes default to a straight resize.
  s.resize = a.resize > 0 ? a.resize : (a.size == 224 ? 256 : a.size);
  s.validate();
  return s;
}

pola::app::RegisterCommand reg([](CLI::App &root) {
  auto args = std::make_shared<PreprocessArgs>();
  auto *c = root.add_subcommand("preprocess",
                                "Decode an image and preprocess it like the reference (PIL bicubic resize, center "
                                "crop, normalize); write a float32 (1, C, H, W) .npy");
  c->add_option("image", args->image, "Image file (JPEG, PNG, BMP, GIF, TGA, PSD, PNM, ...)")->required();
  c->add_option("-o,--output", args->output, "Output .npy file")->required();
  auto *size = c->add_option("--size", args->size, "Model input size = center-crop size (default 224)");
  auto *resize =
      c->add_option("--resize", args->resize, "Square resize before the crop (default: 256 for --size 224, else --size)");
  c->add_option("--spec", args->spec_json,
                "The model's `preprocess` JSON object (weights/FORMAT.md), or @file.json; replaces --size/--resize. "
                "Grey models (\"channels\": 1, with their own mean/std) are only reachable this way");
  c->callback([args, size, resize] {
    const auto spec = make_spec(*args, size->count() > 0, resize->count() > 0);
    const std::vector<float> x = pola::preprocess::load_and_preprocess(args->image, spec);
    pola::io::write_npy(args->output, {1, spec.channels, spec.crop, spec.crop}, x.data());
  });
});

} // namespace
