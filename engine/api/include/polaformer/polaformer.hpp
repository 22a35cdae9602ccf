// polaformer.hpp: a header-only C++ face over the C API (polaformer.h).
//
//     polaformer::Model model("model.pola");
//     std::vector<float> logits = model.run_images({"cat.jpg"});   // or model.run(floats)
//     auto best = polaformer::top_k(logits, 5);   // (index, probability)
//     std::cout << model.class_name(best[0].first) << "\n";
//
// Failures throw polaformer::InputError (status 1: bad file or argument) or
// polaformer::InternalError (status 2). Everything goes through the C
// functions, so this header works with the shared library whatever C++
// standard library or compiler flags the application uses.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "polaformer/polaformer.h"

namespace polaformer {

class Error : public std::runtime_error {
 public:
  Error(pola_status status, const std::string &what) : std::runtime_error(what), status_(status) {}
  pola_status status() const { return status_; }

 private:
  pola_status status_;
};

class InputError : public Error {
 public:
  explicit InputError(const std::string &what) : Error(POLA_ERROR_INPUT, what) {}
};

class InternalError : public Error {
 public:
  explicit InternalError(const std::string &what) : Error(POLA_ERROR_INTERNAL, what) {}
};

// Throws the exception matching a failed status, with pola_last_error().
inline void check(pola_status status) {
  if (status == POLA_OK) return;
  if (status == POLA_ERROR_INPUT) throw InputError(pola_last_error());
  throw InternalError(pola_last_error());
}

inline std::string version() { return pola_version(); }

// The ABI the library implements; POLA_ABI_VERSION is the header's.
inline int abi_version() { return pola_abi_version(); }

struct InputShape {
  int channels = 0, height = 0, width = 0;
  size_t floats() const { return static_cast<size_t>(channels) * height * width; }
};

// What a logits run of several parts (pola_run with options.parts) passes:
// part i holds counts[i] images and gets its logits at logits[i] (one entry
// per part). It only builds the arguments and never throws, so a caller that
// wants the pola_status itself (a server timing its engine call) can make the
// C call; Model::run_parts makes it and throws. options.part_counts points
// into `counts`, which must outlive the run (hence no temporary counts).
struct PartsRun {
  pola_run_options options = pola_run_options_default();
  std::vector<pola_run_output> outputs;

  PartsRun(const std::vector<int> &counts, const std::vector<float *> &logits)
      : outputs(counts.size(), pola_run_output_default()) {
    options.batch = 0;
    options.parts = static_cast<int>(counts.size());
    options.part_counts = counts.data();
    for (size_t i = 0; i < outputs.size() && i < logits.size(); ++i) outputs[i].logits = logits[i];
  }
  PartsRun(std::vector<int> &&counts, const std::vector<float *> &logits) = delete;
};

// A loaded model (move-only). Like the C handle, one Model may be used by
// several threads at once.
class Model {
 public:
  explicit Model(const std::string &path, const pola_options &options = pola_default_options()) {
    check(pola_model_load(path.c_str(), &options, &handle_));
  }
  ~Model() { pola_model_free(handle_); }
  Model(Model &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Model &operator=(Model &&other) noexcept {
    if (this != &other) {
      pola_model_free(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  InputShape input_shape() const {
    InputShape s;
    check(pola_model_input_shape(handle_, &s.channels, &s.height, &s.width));
    return s;
  }
  int num_classes() const { return pola_model_num_classes(handle_); }
  // "fp32", "bf16" or "int8": what options.precision (POLA_PRECISION_*) resolved to.
  std::string precision() const { return pola_model_precision(handle_); }
  // Worker threads per run (options.threads 0 resolved to the core count).
  int threads() const { return pola_model_threads(handle_); }
  std::string class_name(int index) const {
    const char *name = pola_model_class_name(handle_, index);
    if (!name) throw InputError("class index " + std::to_string(index) + " is out of range");
    return name;
  }
  std::vector<std::string> class_names() const {
    std::vector<std::string> names;
    for (int i = 0; i < num_classes(); ++i) names.push_back(class_name(i));
    return names;
  }

  // Logits (batch x num_classes) of a preprocessed NCHW batch; input.size()
  // must be a positive multiple of input_shape().floats().
  std::vector<float> run(const std::vector<float> &input) {
    const size_t per_image = input_shape().floats();
    if (input.empty() || input.size() % per_image != 0)
      throw InputError("input holds " + std::to_string(input.size()) + " floats, not a positive multiple of " +
                       std::to_string(per_image) + " (channels x height x width)");
    const int batch = static_cast<int>(input.size() / per_image);
    std::vector<float> logits(static_cast<size_t>(batch) * num_classes());
    pola_run_options options = pola_run_options_default();
    options.batch = batch;
    run(options, input.data(), logits.data());
    return logits;
  }

  // The one run call (pola_run) on caller-provided memory: one part of
  // options.batch images at `input`, written where `output` says.
  void run(const pola_run_options &options, const float *input, const pola_run_output &output) {
    const float *inputs[1] = {input};
    check(pola_run(handle_, &options, inputs, &output));
  }
  // Its logits-only form: options.outputs should be POLA_OUTPUT_LOGITS.
  void run(const pola_run_options &options, const float *input, float *logits) {
    pola_run_output output = pola_run_output_default();
    output.logits = logits;
    run(options, input, output);
  }
  // Several parts as one batch (pola_run with options.parts and
  // options.part_counts): inputs[i] and outputs[i] per part.
  void run_parts(const pola_run_options &options, const float *const *inputs, const pola_run_output *outputs) {
    check(pola_run(handle_, &options, inputs, outputs));
  }

  // One preprocessed image (channels x height x width floats) from a file.
  std::vector<float> preprocess_image(const std::string &path) const {
    pola_image image{};
    image.path = path.c_str();
    return preprocess_one(image);
  }

  // Logits (paths.size() x num_classes) of image files, run as one batch.
  std::vector<float> run_images(const std::vector<std::string> &paths) {
    pola_run_options options = pola_run_options_default();
    options.batch = static_cast<int>(paths.size());
    check(pola_run_check_memory(handle_, &options));  // before the images are decoded
    std::vector<pola_image> images(paths.size(), pola_image{});
    for (size_t i = 0; i < paths.size(); ++i) images[i].path = paths[i].c_str();
    std::vector<float> x(paths.size() * input_shape().floats());
    check(pola_model_preprocess_batch(handle_, images.data(), options.batch, x.data(), nullptr));
    std::vector<float> logits(paths.size() * static_cast<size_t>(num_classes()));
    run(options, x.data(), logits.data());
    return logits;
  }

  // One preprocessed image from an encoded image held in memory.
  std::vector<float> preprocess_image_bytes(const void *data, size_t size) const {
    pola_image image{};
    image.data = data;
    image.size = size;
    return preprocess_one(image);
  }

  // One preprocessed image from HWC 8-bit pixels (channels 1-4).
  std::vector<float> preprocess_pixels(const unsigned char *pixels, int height, int width, int channels) const {
    pola_image image{};
    image.pixels = pixels;
    image.height = height;
    image.width = width;
    image.channels = channels;
    return preprocess_one(image);
  }

  // The model's description (what `pola info --json` prints), as JSON text.
  std::string info_json() const {
    const char *json = pola_model_info_json(handle_);
    if (!json) throw InternalError(pola_last_error());
    return json;
  }

  // Several callers' images as one engine call (a server's batch): part i
  // holds counts[i] images at inputs[i] and gets its logits at logits[i]
  // (counts[i] x num_classes floats).
  void run_parts(const std::vector<const float *> &inputs, const std::vector<int> &counts,
                 const std::vector<float *> &logits) {
    if (inputs.size() != counts.size() || logits.size() != counts.size())
      throw InputError("run_parts: inputs, counts and logits must have one entry per part");
    const PartsRun parts(counts, logits);
    run_parts(parts.options, inputs.data(), parts.outputs.data());
  }

  // ---- Any input size and backbone features (polaformer.h has the rules) ----
  struct FeatureShape {
    int channels = 0, height = 0, width = 0;
    size_t floats() const { return static_cast<size_t>(channels) * height * width; }
  };
  // Throws InputError naming the nearest valid sizes when height x width cannot run.
  void check_size(int height, int width) const { check(pola_model_check_size(handle_, height, width)); }
  int num_stages() const { return pola_model_num_stages(handle_); }
  int pooled_size() const { return pola_model_pooled_size(handle_); }
  // Per stage, the NCHW feature map of one image of height x width.
  std::vector<FeatureShape> feature_shapes(int height, int width) const {
    std::vector<FeatureShape> shapes(static_cast<size_t>(num_stages()));
    for (int i = 0; i < num_stages(); ++i) {
      FeatureShape &f = shapes[static_cast<size_t>(i)];
      check(pola_model_feature_shape(handle_, height, width, i, &f.channels, &f.height, &f.width));
    }
    return shapes;
  }
  // Logits of a preprocessed NCHW batch of height x width images.
  std::vector<float> run(const std::vector<float> &input, int height, int width) {
    pola_run_options options = pola_run_options_default();
    options.batch = batch_of(input, height, width);
    options.height = height;
    options.width = width;
    std::vector<float> logits(static_cast<size_t>(options.batch) * num_classes());
    run(options, input.data(), logits.data());
    return logits;
  }
  // Engine-filled buffers: stages[i] (batch x its shape, NCHW) for each i in
  // `stages` (0-based; others stay empty), and pooled (batch x pooled_size())
  // when asked for.
  struct Features {
    std::vector<std::vector<float>> stages;
    std::vector<float> pooled;
  };
  Features features(const std::vector<float> &input, int height, int width, const std::vector<int> &stages,
                    bool pooled = false) {
    const int batch = batch_of(input, height, width);
    const std::vector<FeatureShape> shapes = feature_shapes(height, width);
    Features out;
    out.stages.resize(shapes.size());
    std::vector<float *> ptrs(shapes.size(), nullptr);
    for (int i : stages) {
      if (i < 0 || i >= static_cast<int>(shapes.size()))
        throw InputError("stage " + std::to_string(i) + " is not in 0.." + std::to_string(shapes.size() - 1));
      out.stages[static_cast<size_t>(i)].resize(static_cast<size_t>(batch) * shapes[static_cast<size_t>(i)].floats());
      ptrs[static_cast<size_t>(i)] = out.stages[static_cast<size_t>(i)].data();
    }
    if (pooled) out.pooled.resize(static_cast<size_t>(batch) * pooled_size());
    features(input.data(), batch, height, width, ptrs.data(), pooled ? out.pooled.data() : nullptr);
    return out;
  }
  // Caller-provided buffers: stage_out holds num_stages() pointers (NULL for
  // a stage not wanted), pooled is NULL or batch x pooled_size() floats.
  void features(const float *input, int batch, int height, int width, float *const *stage_out, float *pooled) {
    pola_run_options options = pola_run_options_default();
    options.batch = batch;
    options.height = height;
    options.width = width;
    options.outputs = pooled ? POLA_OUTPUT_POOLED : 0u;
    pola_run_output output = pola_run_output_default();
    output.pooled = pooled;
    for (int i = 0; stage_out && i < num_stages() && i < POLA_MAX_STAGES; ++i)
      if (stage_out[i]) {
        options.stage_mask |= 1u << i;
        output.stages[i] = stage_out[i];
      }
    run(options, input, output);
  }
  // What the run `options` describes allocates, and what is available
  // (pola_run_memory_need); nothing is allocated.
  pola_memory_need memory_need(const pola_run_options &options) {
    pola_memory_need need{};
    check(pola_run_memory_need(handle_, &options, &need));
    return need;
  }
  // The same for a logits run of `batch` images of height x width.
  pola_memory_need memory_need(int batch, int height, int width) {
    return memory_need(logits_options(batch, height, width));
  }
  // Throws InputError naming the need and what is available unless that run
  // fits, its inputs and outputs counted as still to be allocated: ask
  // before allocating a request's images (pola_run_check_memory).
  void check_memory(const pola_run_options &options) { check(pola_run_check_memory(handle_, &options)); }
  void check_memory(int batch, int height, int width) { check_memory(logits_options(batch, height, width)); }
  pola_plan_cache_stats plan_cache_stats() {
    pola_plan_cache_stats s{};
    check(pola_model_plan_cache_stats(handle_, &s));
    return s;
  }

  pola_model *get() const { return handle_; }

 private:
  static pola_run_options logits_options(int batch, int height, int width) {
    pola_run_options options = pola_run_options_default();
    options.batch = batch;
    options.height = height;
    options.width = width;
    return options;
  }
  // One image through pola_model_preprocess_batch.
  std::vector<float> preprocess_one(const pola_image &image) const {
    std::vector<float> x(input_shape().floats());
    check(pola_model_preprocess_batch(handle_, &image, 1, x.data(), nullptr));
    return x;
  }
  // Images in an NCHW batch of height x width; throws unless a positive whole number.
  int batch_of(const std::vector<float> &input, int height, int width) const {
    check_size(height, width);
    const size_t per_image = static_cast<size_t>(input_shape().channels) * height * width;
    if (input.empty() || input.size() % per_image != 0)
      throw InputError("input holds " + std::to_string(input.size()) + " floats, not a positive multiple of " +
                       std::to_string(per_image) + " (channels x " + std::to_string(height) + " x " +
                       std::to_string(width) + ")");
    return static_cast<int>(input.size() / per_image);
  }

  pola_model *handle_ = nullptr;
};

// The k most probable classes of one row of `count` logits, as (class index,
// softmax probability), best first; ties keep the lower index first. The
// probabilities are pola_top_k's: what `pola classify` and every other door print.
inline std::vector<std::pair<int, double>> top_k(const float *logits, int count, int k) {
  k = std::max(0, std::min(k, count));
  std::vector<int> index(static_cast<size_t>(k));
  std::vector<double> probability(static_cast<size_t>(k));
  if (k > 0) check(pola_top_k(logits, count, k, index.data(), probability.data()));
  std::vector<std::pair<int, double>> out;
  for (int j = 0; j < k; ++j) out.emplace_back(index[static_cast<size_t>(j)], probability[static_cast<size_t>(j)]);
  return out;
}

// Softmax over one row of logits (pola_top_k's probabilities, as float, in class order).
inline std::vector<float> softmax(const float *logits, int count) {
  std::vector<float> p(static_cast<size_t>(std::max(0, count)));
  for (const auto &r : top_k(logits, count, count)) p[static_cast<size_t>(r.first)] = static_cast<float>(r.second);
  return p;
}

// top_k of a single image's logits.
inline std::vector<std::pair<int, double>> top_k(const std::vector<float> &logits, int k) {
  return top_k(logits.data(), static_cast<int>(logits.size()), k);
}

// The attention core alone on long 1-D sequences (pola_attention in
// polaformer.h has the formula and the argument rules).
inline void attention(const pola_attention_args &args) { check(pola_attention(&args)); }

// An owning array from pola_alloc_floats (2 MB aligned, huge pages advised):
// the layout pola_attention streams fastest. Move-only; contents start
// uninitialised.
class LargeFloats {
 public:
  LargeFloats() = default;
  explicit LargeFloats(size_t count) : data_(pola_alloc_floats(count)), size_(count) {
    if (data_) return;
    if (count == 0) throw InputError(pola_last_error());
    throw InternalError(pola_last_error());
  }
  ~LargeFloats() { pola_free_floats(data_); }
  LargeFloats(LargeFloats &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  LargeFloats &operator=(LargeFloats &&other) noexcept {
    if (this != &other) {
      pola_free_floats(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  LargeFloats(const LargeFloats &) = delete;
  LargeFloats &operator=(const LargeFloats &) = delete;

  float *data() { return data_; }
  const float *data() const { return data_; }
  size_t size() const { return size_; }
  float &operator[](size_t i) { return data_[i]; }
  const float &operator[](size_t i) const { return data_[i]; }

 private:
  float *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace polaformer
