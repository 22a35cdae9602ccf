// polaformer.Model: a loaded model file, over the public C++ API
// (polaformer.hpp). Inference runs with the GIL released, so Python threads
// sharing one Model run at the same time.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <polaformer/polaformer.hpp>

#include "array_input.h"
#include "image_sources.h"

namespace polaformer_py {

class PyModel {
 public:
  PyModel(const pybind11::object &path, const pybind11::object &threads, const pybind11::object &precision,
          bool allow_nonfinite);

  pybind11::array_t<float> run(const pybind11::object &x);
  pybind11::array_t<float> preprocess(const pybind11::object &image);
  // One list of polaformer.Prediction (class name, probability; .index) per image, best first.
  pybind11::list classify(const pybind11::object &images, int top, int batch);

  // What a run of `batch` images of height x width (None: the model's own
  // size) allocates and what is available, in bytes (pola_run_memory_need).
  pybind11::dict memory_need(int batch, const pybind11::object &height, const pybind11::object &width);

  const std::string &path() const { return path_; }
  std::string precision() const { return model_.precision(); }
  int threads() const { return threads_; }
  const std::vector<std::string> &classes() const { return classes_; }
  pybind11::tuple input_shape() const;
  pybind11::object info() const;
  std::string repr() const;
  // The C handle, for calls of the C API that have no method here (features).
  pola_model *handle() const { return model_.get(); }

 private:
  struct LoadArgs {
    std::string path;
    pola_options options{};
  };
  // Every argument checked (raising polaformer.InputError) before the load.
  static LoadArgs load_args(const pybind11::object &path, const pybind11::object &threads,
                            const pybind11::object &precision, bool allow_nonfinite);
  explicit PyModel(const LoadArgs &args);

  // Runs `count` preprocessed images of height x width (GIL released by the
  // caller), in engine calls of at most images_per_call(height, width);
  // `first_image` is the number of input[0] in the caller's batch, for messages.
  void run_released(const char *caller, const float *input, int64_t count, int height, int width, float *logits,
                    int64_t first_image);
  // kMaxRunImages at the model's own size, proportionally fewer (at least 1)
  // for larger images, so an engine call's scratch memory stays bounded.
  int64_t images_per_call(int height, int width) const;
  // Decodes and preprocesses sources [begin, begin + n) into x on the
  // model's threads with the library's batch decoder (pola eval's): for small
  // models decoding costs a sixth of the run. Images that cannot be read are
  // appended to `failures` as (source index, the library's message); the
  // others are written to their places in x. Returns the indices written.
  std::vector<size_t> preprocess_batch(const std::vector<ImageSource> &sources, size_t begin, size_t n, float *x,
                                       std::vector<std::pair<size_t, std::string>> &failures) const;
  // Raises polaformer.InputError (`caller`: ...) unless a run of `count`
  // images of height x width fits in the memory available, its inputs and
  // outputs still to be allocated: asked before the binding allocates them.
  void check_memory(const char *caller, int64_t count, int height, int width);

  polaformer::Model model_;
  std::string path_;
  int threads_ = 0; // as resolved by the library: never 0
  ImageShape shape_;
  std::vector<std::string> classes_;
};

// Largest batch of the model's own input size handed to the engine in one
// call (larger images: fewer, see PyModel::images_per_call): bigger batches are split,
// which bounds the engine's scratch memory. Each image's logits depend on that
// image only; the engine's kernels may block another batch size differently,
// which moves logits by float rounding only (~1e-6).
constexpr int64_t kMaxRunImages = 256;

// Model.run refuses batches whose logits would exceed this many floats (1 GiB):
// a broadcast view can claim any number of images without holding them.
constexpr int64_t kMaxLogitsPerCall = int64_t{1} << 28;

} // namespace polaformer_py
