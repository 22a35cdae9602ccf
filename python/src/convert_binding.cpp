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

std::string text_of(const py::object &v, const char *name) {
  if (!py::isinstance<py::str>(v)) throw_input_error(std::string("convert: ") + name + " must be a str or None");
  return v.cast<std::string>();
}

} // namespace

void convert(const py::object &checkpoint, const py::object &output, const py::object &labels, const py::object &arch,
             const py::object &mean, const py::object &std, const py::object &resize, const py::object &crop,
             const py::object &interpolation) {
  const std::string in = path_of(checkpoint, "checkpoint"), out = path_of(output, "output");
  std::string labels_path, arch_name, interpolation_name;
  std::vector<double> mean_values, std_values;
  pola_convert_options o = pola_default_convert_options();
  if (!labels.is_none()) o.labels_file = (labels_path = path_of(labels, "labels")).c_str();
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
