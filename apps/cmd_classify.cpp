// `pola classify`: the top-K classes of image files, decoded and preprocessed
// as the model file prescribes, run in batches. A table for people, or one
// JSON object per image (--json) for programs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command.h"
#include "engine/api/model_image_spec.h"
#include "engine/model.h"
#include "weights/error.h"

namespace {

struct ClassifyArgs {
  std::string model;
  std::vector<std::string> images;
  int top = 5, batch = 8, threads = 0;
  bool json = false, verbose = false;
};

struct Ranked {
  int index;
  double prob;
};

// Softmax of one row of logits (in double: probabilities of tiny classes
// stay meaningful), the `k` best first; ties keep the lower index first.
std::vector<Ranked> top_k(const float *logits, int classes, int k) {
  const float top = *std::max_element(logits, logits + classes);
  double sum = 0;
  std::vector<Ranked> all(static_cast<size_t>(classes));
  for (int i = 0; i < classes; ++i) sum += (all[i] = {i, std::exp(double(logits[i]) - top)}).prob;
  for (auto &r : all) r.prob /= sum;
  k = std::min(k, classes);
  std::partial_sort(all.begin(), all.begin() + k, all.end(), [](const Ranked &a, const Ranked &b) {
    return a.prob > b.prob || (a.prob == b.prob && a.index < b.index);
  });
  all.resize(static_cast<size_t>(k));
  return all;
}

class Printer {
 public:
  Printer(const ClassifyArgs &a, const std::vector<std::string> &names) : json_(a.json), names_(names) {
    for (const auto &f : a.images) file_width_ = std::max(file_width_, f.size());
  }

  void image(const std::string &file, const std::vector<Ranked> &best) {
    // The header waits for the first result, so a failure on the first
    // image leaves nothing but the error message.
    if (!json_ && !header_done_)
      std::printf("%-*s  %4s  %8s  %s\n", int(file_width_), "IMAGE", "RANK", "PROB", "CLASS");
    header_done_ = true;
    if (json_) {
      nlohmann::json top = nlohmann::json::array();
      for (const auto &r : best) top.push_back({{"index", r.index}, {"class", names_[r.index]}, {"prob", r.prob}});
      std::printf("%s\n", nlohmann::json{{"file", file}, {"top", top}}.dump().c_str());
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

void classify_command(const ClassifyArgs &a) {
  using clock = std::chrono::steady_clock;
  pola::ModelOptions opt;
  opt.threads = a.threads;
  auto model = pola::Model::load(a.model, opt);
  const auto spec = pola::api::model_image_spec(*model, a.model);
  const auto names = model->class_names();
  const int classes = model->config().num_classes;
  const int64_t per_image = model->input_size();
  if (a.verbose)
    std::fprintf(stderr, "pola classify: %s (%s, %d classes, input %d x %d x %d), %d threads, batch %d\n",
                 a.model.c_str(), model->config().arch.c_str(), classes, spec.channels, spec.crop, spec.crop,
                 model->threads(), a.batch);
  Printer print(a, names);
  for (size_t first = 0; first < a.images.size(); first += a.batch) {
    const size_t count = std::min(a.images.size() - first, static_cast<size_t>(a.batch));
    const auto t0 = clock::now();
    std::vector<float> input(count * per_image);
    for (size_t i = 0; i < count; ++i) {
      const auto x = pola::preprocess::load_and_preprocess(a.images[first + i], spec);
      std::copy(x.begin(), x.end(), input.begin() + i * per_image);
    }
    const auto t1 = clock::now();
    std::vector<float> logits(count * classes);
    model->run(input.data(), static_cast<int>(count), logits.data());
    const auto t2 = clock::now();
    if (a.verbose)
      std::fprintf(stderr, "pola classify: images %zu..%zu: decode %.1f ms, run %.1f ms\n", first + 1,
                   first + count, std::chrono::duration<double, std::milli>(t1 - t0).count(),
                   std::chrono::duration<double, std::milli>(t2 - t1).count());
    for (size_t i = 0; i < count; ++i)
      print.image(a.images[first + i], top_k(logits.data() + i * classes, classes, a.top));
  }
}

pola::app::RegisterCommand reg([](CLI::App &root) {
  auto a = std::make_shared<ClassifyArgs>();
  auto *c = root.add_subcommand("classify", "Classify image files: top-K classes with softmax probabilities");
  c->footer("Images are decoded and preprocessed as the model file's metadata prescribes (resize, center crop,\n"
            "normalize). --json prints one line per image: {\"file\": ..., \"top\": [{\"index\", \"class\", \"prob\"}]}.\n"
            "Example: pola classify -m model.pola cat.jpg dog.png --top 3");
  c->add_option("--model,-m", a->model, "Model file (.pola)")->required();
  c->add_option("images", a->images, "Image files (JPEG, PNG, BMP, GIF, TGA, PSD, PNM, ...)")->required();
  c->add_option("--top,-k", a->top, "Classes to show per image")->check(CLI::Range(1, 1000000));
  c->add_option("--batch,-b", a->batch, "Images per run")->check(CLI::Range(1, 4096));
  c->add_flag("--json", a->json, "One JSON object per image (JSON lines) instead of a table");
  c->add_option("--threads,-t", a->threads, "Worker threads (0 = all cores)")->check(CLI::Range(0, 1024));
  c->add_flag("--verbose,-v", a->verbose, "Model, threads and per-batch timings on stderr");
  c->callback([a] { classify_command(*a); });
});

} // namespace
