// `pola features`: backbone feature maps at any input size, for detection and
// segmentation necks. Writes DIR/stage<i>.npy (batch, channels, h, w) float32
// for each requested stage (strides 4, 8, 16, 32 for the released models: the
// tokens after the stage's last block, no extra norm) and DIR/pooled.npy
// (batch, channels), the embedding before the head. Only the stages needed are
// computed; the head never is.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli_checks.h"
#include "command.h"
#include "engine/api/model_image_spec.h"
#include "engine/io/npy.h"
#include "engine/model.h"
#include "input_batch.h"
#include "model/geometry.h"
#include "number_list.h"
#include "precision_option.h"
#include "weights/error.h"
#include "weights/file_access.h"

namespace {

struct FeaturesArgs {
  std::string model, input, out_dir, size, stages = "1,2,3,4";
  std::vector<std::string> images;
  int threads = 0;
  bool pad = false, pooled = false, allow_nonfinite = false;
  pola::PrecisionRequest precision = pola::PrecisionRequest::fp32;
};

// "--stages 1,3" -> {0, 2}: whole numbers in 1..stages, each once.
std::vector<size_t> parse_stages(const std::string &text, size_t stages) {
  std::vector<size_t> out;
  for (double v : pola::app::parse_number_list("--stages", text)) {
    if (v != static_cast<double>(static_cast<long>(v)) || v < 1 || v > static_cast<double>(stages))
      throw pola::InputError("--stages " + text + ": each stage must be a whole number in 1.." + std::to_string(stages));
    const size_t i = static_cast<size_t>(v) - 1;
    for (size_t j : out)
      if (j == i) throw pola::InputError("--stages " + text + ": stage " + std::to_string(i + 1) + " is listed twice");
    out.push_back(i);
  }
  return out;
}

// "512x768" -> (512, 768).
std::pair<int64_t, int64_t> parse_size(const std::string &text) {
  const size_t x = text.find('x');
  auto side = [&](const std::string &s) -> int64_t {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoll(s);
  };
  const int64_t h = x == std::string::npos ? -1 : side(text.substr(0, x));
  const int64_t w = x == std::string::npos ? -1 : side(text.substr(x + 1));
  if (h < 1 || w < 1) throw pola::InputError("--size " + text + ": expected HEIGHTxWIDTH, e.g. --size 512x768");
  return {h, w};
}

// Image files decoded and normalized as the model's metadata prescribes, but
// resized to --size (aspect not kept, bicubic) or kept at their own size.
pola::io::NpyArray load_images(const pola::Model &model, const FeaturesArgs &a) {
  const pola::preprocess::PreprocessSpec spec = pola::api::model_image_spec(model, a.model);
  pola::io::NpyArray x;
  for (const std::string &path : a.images) {
    pola::preprocess::ImageU8 img = pola::preprocess::decode_image(path, spec.channels);
    if (!a.size.empty()) {
      const auto [h, w] = parse_size(a.size);
      img = pola::preprocess::resize_bicubic_u8(img, static_cast<int>(w), static_cast<int>(h));
    }
    if (x.shape.empty()) x.shape = {0, spec.channels, img.height, img.width};
    if (img.height != x.shape[2] || img.width != x.shape[3])
      throw pola::InputError(path + ": image is " + std::to_string(img.height) + "x" + std::to_string(img.width) +
                             " but " + a.images.front() + " is " + std::to_string(x.shape[2]) + "x" +
                             std::to_string(x.shape[3]) + "; images of one batch need one size (give --size HxW)");
    const std::vector<float> planes = pola::preprocess::normalize(img, spec.mean, spec.std);
    x.data.insert(x.data.end(), planes.begin(), planes.end());
    ++x.shape[0];
  }
  return x;
}

void features_command(const FeaturesArgs &a) {
  if (a.input.empty() == a.images.empty())
    throw pola::InputError("give either --input X.npy or image files, not both and not neither");
  pola::ModelOptions opt;
  opt.threads = a.threads;
  opt.allow_nonfinite = a.allow_nonfinite;
  opt.precision = a.precision;
  auto model = pola::Model::load(a.model, opt);
  const pola::ModelConfig &cfg = model->config();
  const std::vector<size_t> stages = parse_stages(a.stages, cfg.num_stages());

  // The pooled embedding needs every stage: written when the last stage is
  // computed anyway, or when --pooled asks for it.
  const bool last_requested = std::find(stages.begin(), stages.end(), cfg.num_stages() - 1) != stages.end();
  const bool want_pooled = a.pooled || last_requested;
  // The run's memory, checked before its outputs (and an --input array) are
  // allocated; `held`: bytes of the inputs already decoded.
  auto check_memory = [&](int64_t batch, int64_t height, int64_t width, size_t held, const std::string &source) {
    pola::PlanKey key;
    key.batch = static_cast<int>(batch);
    key.height = height;
    key.width = width;
    key.logits = false;
    key.pooled = want_pooled;
    for (size_t i : stages) key.stages |= 1u << i;
    try {
      model->check_memory(key, held);
    } catch (const pola::InputError &e) {
      throw pola::InputError(source + ": " + e.what());
    }
  };

  pola::app::InputBatch in;
  if (!a.input.empty()) {
    if (!a.size.empty()) throw pola::InputError("--size resizes image files; an --input array is used at its own size");
    if (const auto shape = pola::app::peek_input_batch(a.input, cfg, a.pad))
      check_memory(shape->batch, shape->height, shape->width, 0, a.input);
    in = pola::app::read_input_batch(a.input, cfg, a.pad);
  } else {
    pola::io::NpyArray images = load_images(*model, a);
    // Images can also be resized to a valid size, as classify resizes them to the model's.
    const std::string resize_to = std::to_string(pola::padded_input_side(cfg, images.shape[2])) + "x" +
                                  std::to_string(pola::padded_input_side(cfg, images.shape[3]));
    in = pola::app::fit_input_batch(std::move(images), cfg, a.pad, a.images.front(),
                                    "resize the images to one with --size " + resize_to + ", or pad them with --pad");
    check_memory(in.batch, in.height, in.width, in.array.data.size() * sizeof(float), a.images.front());
  }

  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec || !std::filesystem::is_directory(a.out_dir))
    throw pola::InputError(a.out_dir + ": -o cannot be used as a directory" +
                           (ec ? " (" + ec.message() + ")" : std::string(" (it exists and is not one)")));
  std::vector<std::string> inputs{a.model};
  if (!a.input.empty()) inputs.push_back(a.input);
  inputs.insert(inputs.end(), a.images.begin(), a.images.end());

  const auto shapes = model->feature_shapes(in.height, in.width);
  std::vector<std::vector<float>> buffers(cfg.num_stages());
  std::vector<float *> out(cfg.num_stages(), nullptr);
  for (size_t i : stages) {
    buffers[i].resize(static_cast<size_t>(in.batch * shapes[i].channels * shapes[i].height * shapes[i].width));
    out[i] = buffers[i].data();
  }
  std::vector<float> pooled(want_pooled ? static_cast<size_t>(in.batch * model->pooled_size()) : 0);
  const std::string source = a.input.empty() ? a.images.front() : a.input;
  try {
    model->features(in.array.data.data(), static_cast<int>(in.batch), in.height, in.width, out.data(),
                    want_pooled ? pooled.data() : nullptr);
  } catch (const pola::InputError &e) {
    throw pola::InputError(source + ": " + e.what());
  }
  std::string written;  // "stage1.npy (1, 32, 8, 8), ..." for the line on stderr
  auto note = [&](const std::string &name, const std::vector<int64_t> &shape) {
    written += (written.empty() ? "" : ", ") + name + " (";
    for (size_t d = 0; d < shape.size(); ++d) written += (d ? ", " : "") + std::to_string(shape[d]);
    written += ")";
  };
  for (size_t i : stages) {
    const std::string name = "stage" + std::to_string(i + 1) + ".npy", path = a.out_dir + "/" + name;
    const std::vector<int64_t> shape{in.batch, shapes[i].channels, shapes[i].height, shapes[i].width};
    pola::weights::check_output_is_not_input(path, inputs);
    pola::io::write_npy(path, shape, out[i]);
    note(name, shape);
  }
  if (want_pooled) {
    const std::string path = a.out_dir + "/pooled.npy";
    pola::weights::check_output_is_not_input(path, inputs);
    pola::io::write_npy(path, {in.batch, model->pooled_size()}, pooled.data());
    note("pooled.npy", {in.batch, model->pooled_size()});
  }
  std::fprintf(stderr, "pola features: wrote float32 %s in %s\n", written.c_str(), a.out_dir.c_str());
}

pola::app::RegisterCommand register_features([](CLI::App &root) {
  auto *cmd = root.add_subcommand(
      "features", "Write backbone feature maps (DIR/stage<i>.npy, NCHW) and the pooled embedding at any input size");
  auto a = std::make_shared<FeaturesArgs>();
  cmd->add_option("--model,-m", a->model, "Model file (.pola)")->required();
  cmd->add_option("--input,-i", a->input, "Input .npy (batch, channels, height, width) of real numbers (any float or integer dtype, converted to float32)");
  cmd->add_option("images", a->images, "Image files (decoded and normalized as the model prescribes; one batch)");
  cmd->add_option("--stages", a->stages, "Stages to write, comma-separated (default 1,2,3,4)");
  cmd->add_option("--size", a->size, "Resize image files to HEIGHTxWIDTH (default: their own size)");
  cmd->add_flag("--pad", a->pad, "Pad the images with zeros (bottom, right) to the next size the model accepts");
  cmd->add_flag("--pooled", a->pooled, "Also write pooled.npy when the last stage is not among --stages");
  cmd->add_option("--output,-o", a->out_dir, "Output directory")->required();
  cmd->add_option("--threads,-t", a->threads, "Worker threads (0 = all cores)")
      ->check(pola::app::whole_number_in(0, 1024));
  pola::app::add_precision_option(*cmd, a->precision);
  cmd->add_flag("--allow-nonfinite", a->allow_nonfinite,
                "Run inputs holding NaN or Inf, and write non-finite features, instead of refusing them");
  cmd->callback([a] { features_command(*a); });
});

} // namespace
