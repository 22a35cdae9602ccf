// `pola classify`: the top-K classes of image files, decoded and preprocessed
// as the model file prescribes, run in batches. A table for people, or one
// JSON object per image (--json) for programs. Arguments may be files,
// directories or "-" (paths on stdin; classify/image_inputs.h). An image that
// cannot be read is reported on stderr and skipped, so one bad file in a
// folder of thousands does not lose the rest; the exit code is still 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "classify/class_ranking.h"
#include "classify/image_inputs.h"
#include "cli_checks.h"
#include "command.h"
#include "precision_option.h"
#include "engine/api/model_image_spec.h"
#include "engine/model.h"
#include "eval/progress_bar.h"
#include "plural.h"
#include "weights/error.h"

namespace {

struct ClassifyArgs {
  std::string model;
  std::vector<std::string> images;
  int top = 5, batch = 8, threads = 0;
  pola::PrecisionRequest precision = pola::PrecisionRequest::fp32;
  bool json = false, verbose = false, low_memory = false;
};

using pola::app::rank_classes;
using Ranked = pola::app::RankedClass;

class Printer {
 public:
  Printer(const ClassifyArgs &a, const std::vector<std::string> &files, const std::vector<std::string> &names)
      : json_(a.json), names_(names) {
    for (const auto &f : files) file_width_ = std::max(file_width_, f.size());
  }

  void image(const std::string &file, const std::vector<Ranked> &best) {
    // The header waits for the first result, so a failure on the first
    // image leaves nothing but the error message.
    if (!json_ && !header_done_)
      std::printf("%-*s  %4s  %8s  %s\n", int(file_width_), "IMAGE", "RANK", "PROB", "CLASS");
    header_done_ = true;
    if (json_) {
      std::printf("%s\n", pola::app::classification_json(file, best, names_).dump().c_str());
    } else {
      for (size_t i = 0; i < best.size(); ++i)
        std::printf("%-*s  %4zu  %7.3f%%  %s\n", int(file_width_), i == 0 ? file.c_str() : "", i + 1,
                    100.0 * best[i].prob, names_[best[i].index].c_str());
    }
    std::fflush(stdout);
  }

 private:
  bool json_;
  const std::vector<std::string> &names_;
  size_t file_width_ = 5;
  bool header_done_ = false;
};

// Fewer images than this finish before a progress bar would tell anything.
constexpr size_t kProgressMinImages = 10;

// Reports one image that cannot be classified; the run goes on without it.
void report_failure(const std::string &message, pola::eval::ProgressBar &bar) {
  bar.clear();
  std::fprintf(stderr, "pola: error: %s\n", message.c_str());
}

void classify_command(const ClassifyArgs &a) {
  using clock = std::chrono::steady_clock;
  // The model first: without it nothing can be classified, so its errors end the run at once.
  pola::ModelOptions opt;
  opt.threads = a.threads;
  opt.precision = a.precision;
  opt.low_memory = a.low_memory;
  auto model = pola::Model::load(a.model, opt);
  const auto spec = pola::api::model_image_spec(*model, a.model);
  const auto names = model->class_names();
  const int classes = model->config().num_classes;
  const int64_t per_image = model->input_size();
  const pola::app::ImageInputs inputs = pola::app::expand_image_inputs(a.images, std::cin);
  const auto &files = inputs.files;
  if (files.empty() && inputs.problems.empty())
    throw pola::InputError("no images to classify (the list read from stdin for '-' was empty)");
  if (a.verbose)
    std::fprintf(stderr, "pola classify: %s (%s, %s, input %d x %d x %d), %s, batch %d, %s\n", a.model.c_str(),
                 model->config().arch.c_str(), pola::app::count_of(classes, "class", "classes").c_str(), spec.channels,
                 spec.crop, spec.crop, pola::app::count_of(model->threads(), "thread").c_str(), a.batch,
                 pola::app::count_of(static_cast<long long>(files.size()), "image").c_str());
  // The bar draws itself only when stderr is a terminal (progress_bar.h).
  pola::eval::ProgressBar bar{files.size() > kProgressMinImages ? int64_t(files.size()) : 0};
  size_t failed = inputs.problems.size();
  for (const auto &problem : inputs.problems) report_failure(problem, bar);
  Printer print(a, files, names);
  // The largest batch, checked before any is decoded (the others fit if it does).
  if (!files.empty())
    model->check_memory(static_cast<int>(std::min(files.size(), size_t(a.batch))), model->config().img_size,
                        model->config().img_size);
  for (size_t first = 0; first < files.size(); first += a.batch) {
    const size_t count = std::min(files.size() - first, static_cast<size_t>(a.batch));
    const auto t0 = clock::now();
    std::vector<float> input(count * per_image);
    std::vector<size_t> decoded; // indices into `files` of this batch's readable images
    for (size_t i = first; i < first + count; ++i) {
      try {
        const auto x = pola::preprocess::load_and_preprocess(files[i], spec);
        std::copy(x.begin(), x.end(), input.begin() + decoded.size() * per_image);
        decoded.push_back(i);
      } catch (const pola::InputError &e) { // the message names the file and the problem
        report_failure(e.what(), bar);
        ++failed;
      }
    }
    const auto t1 = clock::now();
    std::vector<float> logits(decoded.size() * classes);
    if (!decoded.empty()) model->run(input.data(), static_cast<int>(decoded.size()), logits.data());
    const auto t2 = clock::now();
    bar.clear();
    if (a.verbose)
      std::fprintf(stderr, "pola classify: images %zu..%zu: decode %.1f ms, run %.1f ms\n", first + 1,
                   first + count, std::chrono::duration<double, std::milli>(t1 - t0).count(),
                   std::chrono::duration<double, std::milli>(t2 - t1).count());
    for (size_t j = 0; j < decoded.size(); ++j)
      print.image(files[decoded[j]], rank_classes(logits.data() + j * classes, classes, a.top));
    bar.update(int64_t(first + count));
  }
  bar.finish();
  if (failed > 0)
    throw pola::InputError(std::to_string(failed) + " of " + std::to_string(files.size() + inputs.problems.size()) +
                           " inputs could not be classified (see the messages above)");
}

pola::app::RegisterCommand register_classify([](CLI::App &root) {
  auto a = std::make_shared<ClassifyArgs>();
  auto *c = root.add_subcommand("classify", "Classify image files: top-K classes with softmax probabilities");
  c->footer("Images are decoded and preprocessed as the model file's metadata prescribes (resize, center crop,\n"
            "normalize). --json prints one line per image: {\"file\": ..., \"top\": [{\"index\", \"class\", \"prob\"}]}.\n"
            "A directory stands for the image files under it (recursively, sorted), '-' for a list of paths on\n"
            "stdin, one per line. An image that cannot be read is named on stderr and skipped; the others are\n"
            "still classified, and the exit code is 1.\n"
            "Examples: pola classify -m model.pola cat.jpg dog.png --top 3\n"
            "          find photos -name '*.jpg' | pola classify -m model.pola -");
  c->add_option("--model,-m", a->model, "Model file (.pola)")->required();
  c->add_option("images", a->images,
                "Image files (JPEG, PNG, BMP, GIF, TGA, PSD, PNM, ...), directories of them, or - (paths on stdin)")
      ->required();
  c->add_option("--top,-k", a->top, "Classes to show per image")->check(pola::app::whole_number_in(1, 1000000));
  c->add_option("--batch,-b", a->batch, "Images per run")->check(pola::app::whole_number_in(1, 4096));
  pola::app::add_low_memory_flag(*c, a->low_memory);
  c->add_flag("--json", a->json, "One JSON object per image (JSON lines) instead of a table");
  c->add_option("--threads,-t", a->threads, "Worker threads (0 = all cores)")
      ->check(pola::app::whole_number_in(0, 1024));
  pola::app::add_precision_option(*c, a->precision);
  c->add_flag("--verbose,-v", a->verbose, "Model, threads and per-batch timings on stderr");
  c->callback([a] { classify_command(*a); });
});

} // namespace
