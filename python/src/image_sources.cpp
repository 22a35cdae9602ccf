#include "image_sources.h"

#include <polaformer/polaformer.hpp>

#include "array_input.h"
#include "errors.h"

namespace py = pybind11;

namespace polaformer_py {

namespace {

std::string type_name(const py::handle &obj) { return py::str(py::type::of(obj).attr("__name__")).cast<std::string>(); }

bool is_path_like(const py::handle &obj) { return py::isinstance<py::str>(obj) || py::hasattr(obj, "__fspath__"); }

bool is_byte_buffer(const py::handle &obj) {
  return py::isinstance<py::bytes>(obj) || PyByteArray_Check(obj.ptr()) || PyMemoryView_Check(obj.ptr());
}

ImageSource pixels_source(const py::array &given, const std::string &label) {
  ImageSource s;
  s.kind = ImageSource::Kind::pixels;
  s.label = label;
  const auto dtype = given.dtype();
  if (dtype.kind() != 'u' || dtype.itemsize() != 1)
    throw_input_error(label + ": an image array must be uint8 pixels (H x W or H x W x C), got dtype " +
                      dtype_name(dtype) + " (preprocessed float arrays go to Model.run)");
  if (given.ndim() == 2) {
    s.channels = 1;
  } else if (given.ndim() == 3) {
    if (given.shape(2) < 1 || given.shape(2) > 4)
      throw_input_error(label + ": an H x W x C image array needs C = 1 (grey), 2 (grey+alpha), 3 (RGB) or 4 (RGBA), got " +
                        std::to_string(given.shape(2)));
    s.channels = static_cast<int>(given.shape(2));
  } else {
    throw_input_error(label + ": an image array must be H x W or H x W x C, got " + std::to_string(given.ndim()) +
                      " dimensions");
  }
  const py::ssize_t limit = 1 << 30; // the C API refuses large sizes with its own limits; this keeps int from wrapping
  if (given.shape(0) > limit || given.shape(1) > limit)
    throw_input_error(label + ": image array of " + std::to_string(given.shape(0)) + " x " +
                      std::to_string(given.shape(1)) + " pixels is too large");
  s.height = static_cast<int>(given.shape(0));
  s.width = static_cast<int>(given.shape(1));
  s.pixels = py::module_::import("numpy").attr("ascontiguousarray")(given);
  s.pixel_data = static_cast<const unsigned char *>(s.pixels.data());
  return s;
}

ImageSource parse_image(const py::handle &obj, const std::string &label) {
  if (obj.is_none()) throw_input_error(label + " is None; expected a path, encoded image bytes or an HWC uint8 array");
  ImageSource s;
  s.label = label;
  if (is_path_like(obj)) {
    py::object path = py::module_::import("os").attr("fspath")(obj);
    if (!py::isinstance<py::str>(path)) path = path.attr("decode")("utf-8", "surrogateescape");
    s.kind = ImageSource::Kind::path;
    s.path = path.cast<std::string>();
    if (s.path.find('\0') != std::string::npos) throw_input_error(label + ": the path contains a NUL character");
    return s;
  }
  if (is_byte_buffer(obj)) {
    s.kind = ImageSource::Kind::bytes;
    s.bytes = py::module_::import("builtins").attr("bytes")(obj).cast<std::string>(); // an owned copy
    return s;
  }
  if (py::isinstance<py::array>(obj)) return pixels_source(py::reinterpret_borrow<py::array>(obj), label);
  throw_input_error(label + ": expected a path, encoded image bytes or an HWC uint8 array, got " + type_name(obj));
}

} // namespace

std::vector<ImageSource> collect_images(const py::object &images, const std::string &caller) {
  if (images.is_none())
    throw_input_error(caller + ": images is None; expected an image or a list of images");
  if (is_path_like(images) || is_byte_buffer(images) ||
      (py::isinstance<py::array>(images) && py::reinterpret_borrow<py::array>(images).ndim() < 4))
    return {parse_image(images, caller + ": the image")};
  if (!py::hasattr(images, "__iter__"))
    throw_input_error(caller + ": expected an image or a list of images, got " + type_name(images));
  std::vector<ImageSource> out;
  for (py::handle item : images) out.push_back(parse_image(item, caller + ": images[" + std::to_string(out.size()) + "]"));
  return out;
}

ImageSource collect_one_image(const py::object &image, const std::string &caller) {
  return parse_image(image, caller + ": the image");
}

pola_image as_pola_image(const ImageSource &src) {
  pola_image image{};
  switch (src.kind) {
  case ImageSource::Kind::path:
    image.path = src.path.c_str();
    break;
  case ImageSource::Kind::bytes:
    image.data = src.bytes.data();
    image.size = src.bytes.size();
    break;
  case ImageSource::Kind::pixels:
    image.pixels = src.pixel_data;
    image.height = src.height;
    image.width = src.width;
    image.channels = src.channels;
    break;
  }
  return image;
}

void preprocess_into(const pola_model *model, const ImageSource &src, float *out) {
  const pola_image image = as_pola_image(src);
  const pola_status status = pola_model_preprocess_batch(model, &image, 1, out, nullptr);
  if (status == POLA_OK) return;
  const std::string message = src.label + ": " + pola_last_error();
  if (status == POLA_ERROR_INPUT) throw polaformer::InputError(message);
  throw polaformer::InternalError(message);
}

} // namespace polaformer_py
