#include "quantize/calibration_images.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "classify/image_inputs.h"
#include "engine/api/model_image_spec.h"
#include "engine/io/npy.h"
#include "engine/preprocess/decode_image.h"
#include "engine/preprocess/preprocess_batch.h"
#include "eval/dataset.h"
#include "input_batch.h"
#include "weights/error.h"

namespace pola::app {
namespace {

class NpyImages : public CalibrationImages {
 public:
  NpyImages(const std::string &path, int64_t limit, const ModelConfig &cfg) : path_(path) {
    batch_ = fit_input_batch(io::read_npy(path), cfg, false, path, "resize the images to a size the model accepts");
    count_ = std::min(batch_.batch, limit);
    height_ = batch_.height;
    width_ = batch_.width;
  }
  void read(int64_t first, int n, float *out) const override {
    const size_t per = batch_.array.data.size() / size_t(batch_.batch);
    std::memcpy(out, batch_.array.data.data() + size_t(first) * per, size_t(n) * per * sizeof(float));
  }
  std::string description() const override {
    return "the first " + std::to_string(count_) + " of " + std::to_string(batch_.batch) + " images of " + path_;
  }

 private:
  std::string path_;
  InputBatch batch_;
};

// Decoded images (an IDX set or files), preprocessed by the model's metadata.
class DecodedImages : public CalibrationImages {
 public:
  DecodedImages(std::function<preprocess::ImageU8(int64_t, int)> load, int64_t available, int64_t limit,
                preprocess::PreprocessSpec spec, int threads, std::string what)
      : load_(std::move(load)), available_(available), spec_(spec), threads_(threads), what_(std::move(what)) {
    count_ = std::min(available, limit);
    height_ = width_ = spec.crop;
  }
  void read(int64_t first, int n, float *out) const override {
    preprocess::preprocess_batch(
        n, [&](int b) { return load_(first + b, spec_.channels); }, spec_, threads_, out);
  }
  std::string description() const override {
    return "the first " + std::to_string(count_) + " of " + std::to_string(available_) + " images of " + what_;
  }

 private:
  std::function<preprocess::ImageU8(int64_t, int)> load_;
  int64_t available_;
  preprocess::PreprocessSpec spec_;
  int threads_;
  std::string what_;
};

} // namespace

bool is_npy_batch(const std::string &source) {
  const std::string ext = ".npy";
  return source.size() >= ext.size() && source.compare(source.size() - ext.size(), ext.size(), ext) == 0;
}

std::unique_ptr<CalibrationImages> open_calibration_images(const std::string &source, const std::string &split,
                                                           int64_t limit, const Model &model,
                                                           const std::string &model_path) {
  if (limit < 1) throw InputError("--images must be at least 1, got " + std::to_string(limit));
  std::error_code ec;
  const bool is_dir = std::filesystem::is_directory(source, ec);
  if (!is_dir && !std::filesystem::exists(source, ec)) throw InputError(source + ": no such file or directory");
  if (!is_dir && is_npy_batch(source)) return std::make_unique<NpyImages>(source, limit, model.config());
  const auto spec = api::model_image_spec(model, model_path);
  if (is_dir && eval::has_idx_pair(source, split)) {
    std::shared_ptr<eval::Dataset> data = eval::open_idx_dataset(source, split, model.config().num_classes);
    const std::string what = source + " (IDX split " + split + ")";
    auto load = [data](int64_t i, int channels) { return data->load(size_t(i), channels); };
    return std::make_unique<DecodedImages>(load, int64_t(data->size()), limit, spec, model.threads(), what);
  }
  std::istringstream no_stdin;
  const ImageInputs inputs = expand_image_inputs({source}, no_stdin);
  if (!inputs.problems.empty()) throw InputError(inputs.problems.front());
  if (inputs.files.empty())
    throw InputError(source + ": no calibration images (give a .npy batch, a directory with an IDX pair " + split +
                     "-images-idx3-ubyte[.gz], or image files)");
  auto files = std::make_shared<std::vector<std::string>>(inputs.files);
  auto load = [files](int64_t i, int channels) { return preprocess::decode_image((*files)[size_t(i)], channels); };
  return std::make_unique<DecodedImages>(load, int64_t(files->size()), limit, spec, model.threads(), source);
}

} // namespace pola::app
