// `pola preprocess [--model M] IMAGE -o X.npy`: decode and preprocess one image
// exactly as the reference pipeline does (SPEC.md section 7) and save the
// (1, C, H, W) float32 tensor, so the engine's input can be compared with
// PyTorch's. With --model, the preprocessing is the model file's own (what
// `pola classify` does to the image); otherwise --spec or --size/--resize.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "weights/file_access.h"
#include "command.h"
#include "engine/io/npy.h"
#include "engine/preprocess/preprocess.h"
#include "weights/error.h"
#include "weights/model_file.h"
#include "weights/model_metadata.h"

namespace {

struct PreprocessArgs {
  std::string image;
  std::string output;
  int size = 224;
  int resize = 0; // 0: the default for `size`, see below
  std::string spec_json;
  std::string model;
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

// The model file's `preprocess` metadata, checked against the input the model
// takes, as pola classify checks it (engine/api/model_image_spec.h); only the
// metadata is read here, the weights are not loaded.
pola::preprocess::PreprocessSpec model_spec(const std::string &path) {
  using namespace pola::weights;
  const ModelFile f = ModelFile::open(path);
  const pola::ModelConfig cfg = read_model_config(f);
  pola::preprocess::PreprocessSpec spec;
  try {
    spec = pola::preprocess::PreprocessSpec::from_json(read_preprocess(f).dump());
  } catch (const pola::InputError &e) {
    throw pola::InputError(path + ": bad 'preprocess' metadata: " + e.what());
  }
  if (spec.crop != cfg.img_size || spec.channels != cfg.in_chans)
    throw pola::InputError(path + ": 'preprocess' metadata yields " + std::to_string(spec.channels) + " x " +
                           std::to_string(spec.crop) + " x " + std::to_string(spec.crop) + " but the model takes " +
                           std::to_string(cfg.in_chans) + " x " + std::to_string(cfg.img_size) + " x " +
                           std::to_string(cfg.img_size));
  return spec;
}

pola::preprocess::PreprocessSpec make_spec(const PreprocessArgs &a, bool size_given, bool resize_given) {
  using pola::preprocess::PreprocessSpec;
  if (!a.model.empty()) {
    if (!a.spec_json.empty() || size_given || resize_given)
      throw pola::InputError("preprocess: --model cannot be combined with --spec/--size/--resize (the model file "
                             "already says how to preprocess)");
    return model_spec(a.model);
  }
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

pola::app::RegisterCommand register_preprocess([](CLI::App &root) {
  auto args = std::make_shared<PreprocessArgs>();
  auto *c = root.add_subcommand("preprocess",
                                "Decode an image and preprocess it like the reference (PIL bicubic resize, center "
                                "crop, normalize); write a float32 (1, C, H, W) .npy");
  c->add_option("image", args->image, "Image file (JPEG, PNG, BMP, GIF, TGA, PSD, PNM, ...)")->required();
  c->add_option("-o,--output", args->output, "Output .npy file")->required();
  auto *size = c->add_option("--size", args->size, "Model input size = center-crop size (default 224)");
  auto *resize =
      c->add_option("--resize", args->resize, "Square resize before the crop (default: 256 for --size 224, else --size)");
  c->add_option("-m,--model", args->model,
                "Preprocess as this model file prescribes (its `preprocess` metadata, as `pola classify` does); "
                "replaces --spec/--size/--resize");
  c->add_option("--spec", args->spec_json,
                "The model's `preprocess` JSON object (weights/FORMAT.md), or @file.json; replaces --size/--resize. "
                "Grey models (\"channels\": 1, with their own mean/std) are only reachable this way or with --model");
  c->callback([args, size, resize] {
    pola::weights::check_output_is_not_input(args->output, {args->image, args->model});
    const auto spec = make_spec(*args, size->count() > 0, resize->count() > 0);
    const std::vector<float> x = pola::preprocess::load_and_preprocess(args->image, spec);
    pola::io::write_npy(args->output, {1, spec.channels, spec.crop, spec.crop}, x.data());
    // What was written, on stderr: stdout stays clean for `-o /dev/stdout`.
    std::fprintf(stderr, "pola preprocess: wrote %s: float32 (1, %d, %d, %d)\n", args->output.c_str(), spec.channels,
                 spec.crop, spec.crop);
  });
});

} // namespace
