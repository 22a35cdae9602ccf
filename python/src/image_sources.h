// The images Model.classify and Model.preprocess accept: paths (str or
// os.PathLike), encoded image bytes (bytes, bytearray, memoryview) and
// decoded HWC uint8 numpy arrays (H x W grey, or H x W x 1..4 channels).
// They are collected while the GIL is held, then decoded and preprocessed
// without it.
#pragma once

#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <polaformer/polaformer.h>

namespace polaformer_py {

struct ImageSource {
  enum class Kind { path, bytes, pixels } kind = Kind::path;
  std::string label;     // "images[3]", for messages
  std::string path;      // Kind::path
  std::string bytes;     // Kind::bytes: an owned copy of the encoded image
  pybind11::array pixels; // Kind::pixels: C-contiguous uint8, kept alive here
  const unsigned char *pixel_data = nullptr;
  int height = 0, width = 0, channels = 0;
};

// One image, or a sequence of them (list, tuple, any iterable, or a 4-d
// N x H x W x C uint8 array). Raises polaformer.InputError naming the item
// and the problem for anything else (None, numbers, float arrays, ...).
std::vector<ImageSource> collect_images(const pybind11::object &images, const std::string &caller);

// Exactly one image (Model.preprocess).
ImageSource collect_one_image(const pybind11::object &image, const std::string &caller);

// `src` as the C API's pola_image (pointing into `src`, which must outlive it).
pola_image as_pola_image(const ImageSource &src);

// Decodes and preprocesses `src` into channels * height * width floats at
// `out`, as the model's metadata prescribes. Runs without the GIL; throws the
// C++ API's exceptions with the image's label in front of the message.
void preprocess_into(const pola_model *model, const ImageSource &src, float *out);

} // namespace polaformer_py
