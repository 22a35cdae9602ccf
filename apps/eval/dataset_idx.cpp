// The IDX-pair layout of `pola eval` (dataset.h).
#include <filesystem>

#include "dataset.h"
#include "idx_file.h"
#include "plural.h"
#include "weights/error.h"

namespace pola::eval {
namespace {

namespace fs = std::filesystem;

// "<split>-images-idx3-ubyte" or its .gz, whichever exists ("" if neither).
std::string find_idx(const std::string &dir, const std::string &split, const char *kind) {
  const std::string base = dir + "/" + split + "-" + kind;
  for (const std::string &p : {base + ".gz", base})
    if (fs::is_regular_file(p)) return p;
  return "";
}

class IdxDataset : public Dataset {
 public:
  IdxDataset(std::string split, IdxArray images, IdxArray labels, std::string where)
      : split_(std::move(split)), images_(std::move(images)), labels_(std::move(labels)), where_(std::move(where)) {}

  size_t size() const override { return labels_.data.size(); }
  int label(size_t i) const override { return labels_.data[i]; }
  std::string item_name(size_t i) const override { return split_ + "[" + std::to_string(i) + "]"; }
  std::string description() const override { return where_; }

  preprocess::ImageU8 load(size_t i, int channels) const override {
    const int rows = int(images_.dims[1]), cols = int(images_.dims[2]);
    const uint8_t *src = images_.data.data() + i * size_t(rows) * cols;
    preprocess::ImageU8 img(cols, rows, channels);
    // Grey to RGB replicates the value, as PIL's convert('RGB') of an 'L' image does.
    for (size_t p = 0; p < size_t(rows) * cols; ++p)
      for (int c = 0; c < channels; ++c) img.pixels[p * channels + c] = src[p];
    return img;
  }

 private:
  std::string split_;
  IdxArray images_, labels_;
  std::string where_;
};

} // namespace

bool has_idx_pair(const std::string &dir, const std::string &split) {
  return !find_idx(dir, split, "images-idx3-ubyte").empty() && !find_idx(dir, split, "labels-idx1-ubyte").empty();
}

std::unique_ptr<Dataset> open_idx_dataset(const std::string &dir, const std::string &split, int num_classes) {
  const std::string image_path = find_idx(dir, split, "images-idx3-ubyte");
  const std::string label_path = find_idx(dir, split, "labels-idx1-ubyte");
  if (image_path.empty() || label_path.empty())
    throw InputError(dir + ": no " + split + "-images-idx3-ubyte[.gz] / " + split + "-labels-idx1-ubyte[.gz] pair");
  IdxArray images = read_idx_u8(image_path);
  IdxArray labels = read_idx_u8(label_path);
  if (images.dims.size() != 3 || images.dims[1] < 1 || images.dims[2] < 1)
    throw InputError(image_path + ": expected an (n, rows, cols) image array");
  if (labels.dims.size() != 1) throw InputError(label_path + ": expected a 1-D label array");
  if (labels.dims[0] != images.dims[0])
    throw InputError(dir + ": " + std::to_string(images.dims[0]) + " images but " + std::to_string(labels.dims[0]) +
                     " labels");
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] >= num_classes)
      throw InputError(label_path + ": label " + std::to_string(labels.data[i]) + " of image " + std::to_string(i) +
                       " is not below the model's " + std::to_string(num_classes) + " classes");
  const std::string where = "IDX " + image_path + " (" + app::count_of(images.dims[0], "image") + " " +
                            std::to_string(images.dims[1]) + "x" + std::to_string(images.dims[2]) + ")";
  return std::make_unique<IdxDataset>(split, std::move(images), std::move(labels), where);
}

} // namespace pola::eval
