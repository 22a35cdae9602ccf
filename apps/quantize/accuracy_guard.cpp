#include "quantize/accuracy_guard.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "engine/api/model_image_spec.h"
#include "engine/model.h"
#include "engine/preprocess/preprocess_batch.h"
#include "eval/dataset.h"
#include "eval/metrics.h"
#include "quantize/calibration_images.h"
#include "weights/error.h"

namespace pola::app {
namespace {

// Logits of the first `n` images of the set and the top-1 percentage.
struct SetRun {
  std::vector<float> logits;
  double top1 = 0;
};

class LabelledSet {
 public:
  LabelledSet(const AccuracyGuardOptions &o, const Model &float_model) : o_(o) {
    require_labelled_source(o.data);
    data_ = eval::open_dataset({o.data, o.split, "", {}}, float_model.class_names());
    n_ = std::min<int64_t>(o.images, int64_t(data_->size()));
    if (n_ < 1) throw InputError(o.data + ": no labelled image to measure the accuracy on");
    spec_ = api::model_image_spec(float_model, o.model_path);
    classes_ = float_model.config().num_classes;
  }
  int64_t size() const { return n_; }
  int classes() const { return classes_; }
  std::string description() const { return "the first " + std::to_string(n_) + " images of " + data_->description(); }

  SetRun run(Model &model, int64_t n) const {
    SetRun r;
    r.logits.resize(size_t(n) * size_t(classes_));
    eval::Metrics metrics(classes_);
    const size_t per_image = size_t(spec_.channels) * spec_.crop * spec_.crop;
    std::vector<float> input(per_image * size_t(o_.batch));
    for (int64_t first = 0; first < n; first += o_.batch) {
      const int count = int(std::min<int64_t>(o_.batch, n - first));
      preprocess::preprocess_batch(
          count, [&](int b) { return data_->load(size_t(first + b), spec_.channels); }, spec_, model.threads(),
          input.data());
      float *out = r.logits.data() + size_t(first) * size_t(classes_);
      model.run(input.data(), count, out);
      for (int b = 0; b < count; ++b) metrics.add(out + size_t(b) * size_t(classes_), data_->label(size_t(first + b)));
    }
    r.top1 = metrics.top1_percent();
    return r;
  }

 private:
  const AccuracyGuardOptions &o_;
  std::unique_ptr<eval::Dataset> data_;
  int64_t n_ = 0;
  preprocess::PreprocessSpec spec_;
  int classes_ = 0;
};

// The trial file, removed however the search ends.
struct TrialFile {
  std::string path;
  ~TrialFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

double relative_logit_error(const std::vector<float> &a, const std::vector<float> &ref, size_t n) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    diff += double(a[i] - ref[i]) * double(a[i] - ref[i]);
    norm += double(ref[i]) * double(ref[i]);
  }
  return norm > 0 ? diff / norm : diff;
}

} // namespace

void require_labelled_source(const std::string &data) {
  if (is_npy_batch(data))
    throw InputError(data + ": --max-accuracy-drop needs labelled images (an IDX pair or a directory of class "
                            "folders), and a .npy batch has no labels");
}

AccuracyGuardResult choose_int8_layers(const weights::ModelFile &float_file,
                                       const std::map<std::string, float> &input_max_abs,
                                       const weights::QuantizeRecord &record, const AccuracyGuardOptions &o) {
  std::error_code ec;
  if (std::filesystem::exists(o.trial_path, ec))
    throw InputError(o.trial_path + ": exists; it is where --max-accuracy-drop writes its trial files");
  TrialFile trial{o.trial_path};
  ModelOptions float_options;
  float_options.threads = o.threads;
  float_options.precision = PrecisionRequest::fp32;
  auto float_model = Model::load(o.model_path, float_options);
  const LabelledSet set(o, *float_model);
  const SetRun reference = set.run(*float_model, set.size());
  float_model.reset();

  ModelOptions int8_options = float_options;
  int8_options.precision = PrecisionRequest::int8;
  auto run_int8 = [&](const std::map<std::string, float> &layers, int64_t n) {
    weights::write_int8_model(float_file, layers, record, o.trial_path);
    auto model = Model::load(o.trial_path, int8_options);
    return set.run(*model, n);
  };

  AccuracyGuardResult result;
  result.images = set.size();
  result.data_description = set.description();
  result.float_top1 = reference.top1;
  result.quantized = input_max_abs;
  const SetRun all_int8 = run_int8(input_max_abs, set.size());
  result.int8_top1 = all_int8.top1;
  std::fprintf(stderr, "accuracy on %s: float %.2f%%, int8 %.2f%%\n", set.description().c_str(), reference.top1,
               all_int8.top1);
  if (reference.top1 - all_int8.top1 <= o.max_drop) return result;

  // Each layer alone in int8, on the first images: how far it moves the logits.
  const int64_t probe = std::min(o.sensitivity_images, set.size());
  const size_t probe_values = size_t(probe) * size_t(set.classes());
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto &[layer, max_abs] : input_max_abs) {
    const SetRun alone = run_int8({{layer, max_abs}}, probe);
    ranked.push_back({relative_logit_error(alone.logits, reference.logits, probe_values), layer});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) { return a.first > b.first; });

  auto without_top = [&](size_t k) {
    std::map<std::string, float> layers = input_max_abs;
    for (size_t i = 0; i < k; ++i) layers.erase(ranked[i].second);
    return layers;
  };
  // The smallest k whose drop is within P; k = all layers is float and costs nothing.
  size_t lo = 1, hi = ranked.size();
  std::map<size_t, double> measured;
  while (lo < hi) {
    const size_t k = (lo + hi) / 2;
    const double top1 = run_int8(without_top(k), set.size()).top1;
    measured[k] = top1;
    std::fprintf(stderr, "  the %zu most sensitive layer%s kept float: int8 %.2f%%\n", k, k == 1 ? "" : "s", top1);
    if (reference.top1 - top1 <= o.max_drop)
      hi = k;
    else
      lo = k + 1;
  }
  if (lo == ranked.size()) {
    char allowed[32];
    std::snprintf(allowed, sizeof allowed, "%.2f", o.max_drop);
    throw InputError(o.model_path + ": int8 costs more than " + std::string(allowed) + " points of top-1 on " +
                     set.description() + " unless every layer stays float; use the float model (or allow a larger drop)");
  }
  result.quantized = without_top(lo);
  for (size_t i = 0; i < lo; ++i) result.kept_float.push_back(ranked[i].second);
  result.int8_top1 = measured.at(lo); // hi only moves to a k that was measured within P
  return result;
}

} // namespace pola::app
