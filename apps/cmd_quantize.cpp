// `pola quantize`: a float model file -> an int8 one (weights/int8_quantize.h
// says what is stored). The model runs fp32 over the calibration images while
// each int8-capable linear layer records its input range; then every such
// layer gets int8 weights (per output channel) and a static activation scale.
// Patch embeddings and the classifier head stay float. With
// --max-accuracy-drop, the layers whose int8 costs top-1 on a labelled set stay
// float too (quantize/accuracy_guard.h).
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli_checks.h"
#include "command.h"
#include "engine/calibration.h"
#include "engine/model.h"
#include "quantize/accuracy_guard.h"
#include "quantize/calibration_images.h"
#include "weights/error.h"
#include "weights/file_access.h"
#include "weights/int8_quantize.h"

namespace {

struct QuantizeArgs {
  std::string model, calibration, output, split = "train";
  int64_t images = 256, accuracy_images = 1000;
  int threads = 0, batch = 32;
  double max_accuracy_drop = -1; // < 0: every calibrated layer in int8
};

std::string two_decimals(double v, const char *suffix) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f%s", v, suffix);
  return buf;
}
std::string percent(double p) { return two_decimals(p, "%"); }

void quantize_command(const QuantizeArgs &a) {
  pola::weights::check_output_is_not_input(a.output, {a.model, a.calibration});
  if (a.batch < 1) throw pola::InputError("--batch must be at least 1, got " + std::to_string(a.batch));
  if (a.max_accuracy_drop >= 0) pola::app::require_labelled_source(a.calibration);
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
  pola::weights::QuantizeRecord record{images->description(), images->size(), {}, {}};
  std::map<std::string, float> layers = ranges;
  std::string accuracy_line;
  if (a.max_accuracy_drop >= 0) {
    pola::app::AccuracyGuardOptions guard;
    guard.max_drop = a.max_accuracy_drop;
    guard.model_path = a.model;
    guard.data = a.calibration;
    guard.split = a.split;
    guard.images = a.accuracy_images;
    guard.threads = a.threads;
    guard.batch = a.batch;
    guard.trial_path = a.output + ".trial";
    const auto chosen = pola::app::choose_int8_layers(model->file(), ranges, record, guard);
    layers = chosen.quantized;
    record.kept_float = chosen.kept_float;
    record.accuracy = "top-1 on " + chosen.data_description + ": float " + percent(chosen.float_top1) + ", int8 " +
                      percent(chosen.int8_top1);
    accuracy_line = record.accuracy + " (drop " + two_decimals(chosen.float_top1 - chosen.int8_top1, " points") +
                    ", allowed " + two_decimals(a.max_accuracy_drop, "") + ")\n";
    if (chosen.kept_float.empty())
      accuracy_line += "kept float for accuracy: none\n";
    else {
      accuracy_line += "kept float for accuracy (" + std::to_string(chosen.kept_float.size()) +
                       ", most sensitive first):";
      for (const auto &layer : chosen.kept_float) accuracy_line += " " + layer;
      accuracy_line += "\n";
    }
  }
  pola::weights::write_int8_model(model->file(), layers, record, a.output);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("quantized %zu linear layers to int8 (weights per output channel; activations per tensor, static, "
              "from %s) in %.1f s; kept float: patch embeddings, the classifier head, everything else\n"
              "%swrote %s\n",
              layers.size(), images->description().c_str(), seconds, accuracy_line.c_str(), a.output.c_str());
}

pola::app::RegisterCommand register_quantize([](CLI::App &root) {
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
  auto *drop = c->add_option("--max-accuracy-drop", a->max_accuracy_drop,
                "Keep float the layers whose int8 costs top-1 accuracy, until the drop on the labelled "
                "calibration set (an IDX pair or class folders) is at most P points; reports which")
      ->option_text("P")
      ->check(pola::app::number_in(0, 100));
  c->add_option("--accuracy-images", a->accuracy_images,
                "With --max-accuracy-drop: measure top-1 on the first N labelled images (default 1000)")
      ->check(pola::app::whole_number_in(1, 1000000))
      ->needs(drop);
  c->add_option("--threads,-t", a->threads, "Worker threads (0 = all cores)")
      ->check(pola::app::whole_number_in(0, 1024));
  c->add_option("--batch,-b", a->batch, "Images per model run (default 32)")
      ->check(pola::app::whole_number_in(1, 4096));
  c->callback([a] { quantize_command(*a); });
});

} // namespace
