// Labelled images for `pola eval`, from one of three layouts:
//
//   IDX pair     DIR holds <split>-images-idx3-ubyte[.gz] and <split>-labels-idx1-ubyte[.gz]
//                (MNIST / Fashion-MNIST; --split picks e.g. t10k or train). Each image is a
//                grey 8-bit picture, exactly the pixels a PNG of it would hold.
//   labels file  --labels FILE: one "PATH<TAB>LABEL" (or "PATH LABEL") per line, PATH relative
//                to DIR, LABEL a class index or one of the model's class names (matched as
//                folder names are); '#' comments.
//   ImageFolder  DIR/<class folder>/**/<image>: folders named after the model's classes are
//                those classes (all of them or some), others are taken in sorted (byte) order
//                (torchvision's rule), or as --class-order says (class_folders.h); images in
//                sorted path order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/preprocess/image_u8.h"

namespace pola::eval {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual size_t size() const = 0;
  virtual int label(size_t i) const = 0;
  // A name for messages and the predictions file (a relative path, or "t10k[17]").
  virtual std::string item_name(size_t i) const = 0;
  // Decoded pixels with `channels` (1 grey or 3 RGB) per pixel, as PIL's convert() gives them.
  // Thread-safe: called concurrently for different i.
  virtual preprocess::ImageU8 load(size_t i, int channels) const = 0;
  virtual std::string description() const = 0;
};

struct DatasetOptions {
  std::string dir;
  std::string split = "t10k";   // IDX only
  std::string labels_file;      // optional
  std::vector<std::string> class_order; // ImageFolder only, optional: folder of class i at i
};

// Picks the layout as described above and checks every label against the model's classes.
// Throws pola::InputError on anything unusable.
std::unique_ptr<Dataset> open_dataset(const DatasetOptions &opt, const std::vector<std::string> &class_names);

// The individual layouts (dataset_idx.cpp, dataset_files.cpp).
std::unique_ptr<Dataset> open_idx_dataset(const std::string &dir, const std::string &split, int num_classes);
bool has_idx_pair(const std::string &dir, const std::string &split);
std::unique_ptr<Dataset> open_image_folder(const std::string &dir, const std::vector<std::string> &class_names,
                                           const std::vector<std::string> &class_order);
std::unique_ptr<Dataset> open_labels_file(const std::string &dir, const std::string &labels_file,
                                          const std::vector<std::string> &class_names);

} // namespace pola::eval
