#include "convert_binding.h"

#include <string>
#include <vector>

#include <polaformer/polaformer.hpp>

#include "errors.h"

namespace py = pybind11;

namespace polaformer_py {

namespace {

std::string path_of(const py::object &p, const char *name) {
  if (p.is_none() || (!py::isinstance<py::str>(p) && !py::hasattr(p, "__fspath__")))
    throw_input_error(std::string("convert: ") + name + " must be a path (str or os.PathLike)");
  py::object s = py::module_::import("os").attr("fspath")(p);
  if (!py::isinstance<py::str>(s)) s = s.attr("decode")("utf-8", "surrogateescape");
  return s.cast<std::string>();
}

// A number or a sequence of numbers (one per input channel).
std::vector<double> numbers_of(const py::object &v, const char *name) {
  std::vector<double> out;
  if (py::isinstance<py::str>(v)) throw_input_error(std::string("convert: ") + name + " must be numbers, not a str");
  try {
    if (py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v)) return {v.cast<double>()};
    for (py::handle item : v) out.push_back(item.cast<double>());
  } catch (const py::cast_error &) {
    throw_input_error(std::string("convert: ") + name + " must be a number or a sequence of numbers");
  } catch (const py::error_already_set &) {
    throw_input_error(std::string("convert: ") + name + " must be a number or a sequence of numbers");
  }
  if (out.empty()) throw_input_error(std::string("convert: ") + name + " is empty; give one value per input channel");
  return out;
}

int size_of(const py::object &v, const char *name) {
  if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v))
    throw_input_error(std::string("convert: ") + name + " must be an int or None");
  const long long n = v.cast<long long>();
  if (n < 1 || n > 1 << 20) throw_input_error(std::string("convert: ") + name + " must be >= 1, got " + std::to_string(n));
  return static_cast<int>(n);
}

// labels: a labels file (a path), or the class names themselves (any
// sequence of str, checked by the library as a file's lines are).
bool is_path(const py::object &v) { return py::isinstance<py::str>(v) || py::hasattr(v, "__fspath__"); }

std::vector<std::string> names_of(const py::object &labels) {
  if (py::isinstance<py::bytes>(labels) || !py::hasattr(labels, "__iter__"))
    throw_input_error("convert: labels must be a path (str or os.PathLike) or a sequence of class names");
  std::vector<std::string> names;
  for (py::handle item : labels) {
    const std::string entry = "convert: labels[" + std::to_string(names.size()) + "]";
    if (!py::isinstance<py::str>(item))
      throw_input_error(entry + " must be a str, got " + py::str(py::type::of(item).attr("__name__")).cast<std::string>());
    names.push_back(item.cast<std::string>());
    if (names.back().find('\0') != std::string::npos) throw_input_error(entry + " holds a NUL character");
  }
  if (names.empty()) throw_input_error("convert: labels is empty; give one class name per class, in class-index order");
  return names;
}

std::string text_of(const py::object &v, const char *name) {
  if (!py::isinstance<py::str>(v)) throw_input_error(std::string("convert: ") + name + " must be a str or None");
  return v.cast<std::string>();
}

} // namespace

void convert(const py::object &checkpoint, const py::object &output, const py::object &labels, const py::object &arch,
             const py::object &mean, const py::object &std, const py::object &resize, const py::object &crop,
             const py::object &interpolation, const py::object &dtype, const py::object &weights) {
  const std::string in = path_of(checkpoint, "checkpoint"), out = path_of(output, "output");
  std::string labels_path, arch_name, interpolation_name, dtype_name, weights_name;
  std::vector<std::string> names;
  std::vector<const char *> name_pointers;
  std::vector<double> mean_values, std_values;
  pola_convert_options o = pola_default_convert_options();
  if (!labels.is_none() && is_path(labels)) {
    o.labels_file = (labels_path = path_of(labels, "labels")).c_str();
  } else if (!labels.is_none()) {
    names = names_of(labels);
    for (const auto &n : names) name_pointers.push_back(n.c_str());
    o.class_names = name_pointers.data();
    o.num_class_names = static_cast<int>(name_pointers.size());
  }
  if (!dtype.is_none()) {
    if (!py::isinstance<py::str>(dtype)) throw_input_error("convert: dtype must be 'f32', 'bf16' or None");
    o.dtype = (dtype_name = dtype.cast<std::string>()).c_str();
  }
  if (!weights.is_none()) {
    if (!py::isinstance<py::str>(weights)) throw_input_error("convert: weights must be 'raw', 'ema' or None");
    o.weights = (weights_name = weights.cast<std::string>()).c_str();
  }
  if (!arch.is_none()) o.arch = (arch_name = text_of(arch, "arch")).c_str();
  if (!mean.is_none()) {
    mean_values = numbers_of(mean, "mean");
    o.mean = mean_values.data();
    o.num_mean = static_cast<int>(mean_values.size());
  }
  if (!std.is_none()) {
    std_values = numbers_of(std, "std");
    o.std = std_values.data();
    o.num_std = static_cast<int>(std_values.size());
  }
  if (!resize.is_none()) o.resize = size_of(resize, "resize");
  if (!crop.is_none()) o.crop = size_of(crop, "crop");
  if (!interpolation.is_none()) o.interpolation = (interpolation_name = text_of(interpolation, "interpolation")).c_str();
  py::gil_scoped_release nogil; // reading and writing a checkpoint takes seconds
  polaformer::check(pola_convert(in.c_str(), out.c_str(), &o));
}

} // namespace polaformer_py
