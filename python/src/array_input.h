// The NCHW batch Model.run takes: any array-like numpy can read, checked
// against the model's channels before anything is copied or run (the height
// and width are the library's to judge: pola_model_check_size).
#pragma once

#include <cstdint>
#include <string>

#include <pybind11/numpy.h>

namespace polaformer_py {

struct ImageShape {
  int channels = 0, height = 0, width = 0;
  std::string text() const; // "(C, H, W)"
};

// "float32", "complex128", "<U3", ...
std::string dtype_name(const pybind11::dtype &dtype);

// `x` as a numpy array of real numbers with shape (N, C, H, W), C the
// model's channels (`shape` is the model's own input, named in messages);
// raises polaformer.InputError (a ValueError) naming the problem otherwise
// (None, 0-d, wrong rank or channels, bool/complex/object/string dtypes).
pybind11::array checked_batch(const pybind11::object &x, const ImageShape &shape);

// True when `a` can be handed to the engine as it is: float32, native byte
// order, C-contiguous and aligned.
bool usable_without_copy(const pybind11::array &a);

// Images [begin, begin + count) of `batch` as a C-contiguous float32 array
// (a converted copy of just those images; needs the GIL).
pybind11::array_t<float, pybind11::array::c_style> float32_slice(const pybind11::array &batch, int64_t begin,
                                                                 int64_t count);

} // namespace polaformer_py
