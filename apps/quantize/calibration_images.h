// The images `pola quantize` calibrates on, as the model's input batches:
//   a .npy file      (N, C, H, W) floats, already preprocessed (as `pola run` takes them);
//   an IDX directory <split>-images-idx3-ubyte[.gz] (+ labels), as `pola eval --data`;
//   anything else    a directory of image files (searched recursively, sorted by path)
//                    or one image file, each preprocessed by the model's own metadata.
// The first `limit` images are taken.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/model.h"

namespace pola::app {

class CalibrationImages {
 public:
  virtual ~CalibrationImages() = default;
  int64_t size() const { return count_; }
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  // Images [first, first + n) into `out` (n * C * H * W floats).
  virtual void read(int64_t first, int n, float *out) const = 0;
  // "the first 256 of 60000 images of /data/train-images-idx3-ubyte.gz": for the metadata and the report.
  virtual std::string description() const = 0;

 protected:
  int64_t count_ = 0, height_ = 0, width_ = 0;
};

// Whether `source` names a .npy batch (preprocessed, unlabelled), by its name.
bool is_npy_batch(const std::string &source);

// Throws InputError naming `source` when it holds no usable image.
std::unique_ptr<CalibrationImages> open_calibration_images(const std::string &source, const std::string &split,
                                                           int64_t limit, const Model &model,
                                                           const std::string &model_path);

} // namespace pola::app
