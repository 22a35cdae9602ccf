#include "array_input.h"

#include "errors.h"

namespace py = pybind11;

namespace polaformer_py {

std::string ImageShape::text() const {
  return "(" + std::to_string(channels) + ", " + std::to_string(height) + ", " + std::to_string(width) + ")";
}

namespace {

std::string shape_text(const py::array &a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

} // namespace

std::string dtype_name(const py::dtype &dtype) { return py::str(dtype.attr("name")).cast<std::string>(); }

py::array checked_batch(const py::object &x, const ImageShape &shape) {
  const std::string expected = "(N, " + shape.text().substr(1);
  if (x.is_none()) throw_input_error("Model.run: x is None; expected a float32 array of shape " + expected);
  py::array a;
  try {
    a = py::module_::import("numpy").attr("asarray")(x);
  } catch (const py::error_already_set &e) {
    throw_input_error(std::string("Model.run: x is not an array of numbers (") + e.what() + ")");
  }
  const char kind = a.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u')
    throw_input_error("Model.run: x has dtype " + dtype_name(a.dtype()) +
                      ", not real numbers; expected float32 (other float and integer types are converted)");
  if (a.ndim() != 4 || a.shape(1) != shape.channels)
    throw_input_error("Model.run: x has shape " + shape_text(a) + "; expected " + expected +
                      " or (N, " + std::to_string(shape.channels) +
                      ", H, W) at another size the model accepts (N preprocessed images, NCHW; "
                      "Model.preprocess makes one from an image)");
  return a;
}

bool usable_without_copy(const py::array &a) {
  return py::isinstance<py::array_t<float, py::array::c_style>>(a) &&
         (a.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
}

py::array_t<float, py::array::c_style> float32_slice(const py::array &batch, int64_t begin, int64_t count) {
  py::object part = batch[py::slice(begin, begin + count, 1)];
  py::object np = py::module_::import("numpy");
  return np.attr("require")(part, np.attr("float32"), py::make_tuple("C", "A"));
}

} // namespace polaformer_py
