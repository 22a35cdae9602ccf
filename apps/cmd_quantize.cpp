// `pola quantize`: a float model file -> an int8 one (weights/int8_quantize.h
// says what is stored). The model runs fp32 over the calibration images while
// each int8-capable linear layer records its input range; then every such
// layer gets int8 weights (per output channel) and a static activation scale.
// Patch embeddings and the classifier head stay float.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_checks.h"
#include "command.h"
#include "engine/calibration.h"
#include "engine/model.h"
#include "quantize/calibration_images.h"
#include "weights/error.h"
#include "weights/file_access.h"
#include "weights/int8_quantize.h"

namespace {

struct QuantizeArgs {
  std::string model, calibration, output, split = "train";
  int64_t images = 256;
  int threads = 0, batch = 32;
};

void quantize_command(const QuantizeArgs &a) {
  pola::weights::check_output_is_not_input(a.output, {a.model, a.calibration});
  if (a.batch < 1) throw pola::InputError("--batch must be at least 1, got " + std::to_string(a.batch));
  pola::CalibrationRecorder recorder;
  pola::ModelOptions options;
  options.threads = a.threads;
  options.calibration = &recorder;
  const auto model = pola::Model::load(a.model, options);
  for (const auto &t : model->file().tensors())
    if (t.dtype == pola::weights::StoredDtype::i8)
      throw pola::InputError(a.model + ": already quantized (" + t.name + " is int8); quantize the float model");
  const auto images = pola::app::open_calibration_images(a.calibration, a.split, a.images, *model, a.model);
  const auto start = std::chrono::steady_clock::now();
  const int64_t per_image = int64_t(model->config().in_chans) * images->height() * images->width();
  std::vector<float> input(size_t(per_image) * size_t(a.batch));
  std::vector<float> logits(size_t(model->config().num_classes) * size_t(a.batch));
  for (int64_t first = 0; first < images->size(); first += a.batch) {
    const int n = int(std::min<int64_t>(a.batch, images->size() - first));
    images->read(first, n, input.data());
    model->run(input.data(), n, images->height(), images->width(), logits.data());
  }
  const auto ranges = recorder.max_abs();
  if (ranges.empty()) throw pola::InputError(a.model + ": the model has no linear layer that can run in int8");
  pola::weights::write_int8_model(model->file(), ranges, {images->description(), images->size()}, a.output);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("quantized %zu linear layers to int8 (weights per output channel; activations per tensor, static, "
              "from %s) in %.1f s; kept float: patch embeddings, the classifier head, everything else\n"
              "wrote %s\n",
              ranges.size(), images->description().c_str(), seconds, a.output.c_str());
}

pola::app::RegisterCommand reg([](CLI::App &root) {
  auto a = std::make_shared<QuantizeArgs>();
  auto *c = root.add_subcommand("quantize", "Make an int8 model file from a float one, calibrated on images "
                                            "(run it with --precision int8)");
  c->add_option("--model,-m", a->model, "Float model file (.pola)")->required();
  c->add_option("--calibration,-c", a->calibration,
                "Calibration images: a .npy batch (N, C, H, W, preprocessed), a directory with an IDX pair "
                "<split>-images-idx3-ubyte[.gz], or a directory of image files (or one image)")
      ->required();
  c->add_option("--output,-o", a->output, "The int8 model file to write")->required();
  c->add_option("--images,-n", a->images, "Calibrate on the first N images (default 256)")
      ->check(pola::app::whole_number_in(1, 1000000));
  c->add_option("--split", a->split, "IDX split name, the file-name prefix (default train)");
  c->add_option("--threads,-t", a->threads, "Worker threads (0 = all cores)")
      ->check(pola::app::whole_number_in(0, 1024));
  c->add_option("--batch,-b", a->batch, "Images per model run (default 32)")
      ->check(pola::app::whole_number_in(1, 4096));
  c->callback([a] { quantize_command(*a); });
});

} // namespace
