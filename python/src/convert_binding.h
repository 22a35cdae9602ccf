// polaformer.convert: pola_convert (the C API of `pola convert`) for Python.
#pragma once

#include <pybind11/pybind11.h>

namespace polaformer_py {

void convert(const pybind11::object &checkpoint, const pybind11::object &output, const pybind11::object &labels,
             const pybind11::object &arch, const pybind11::object &mean, const pybind11::object &std,
             const pybind11::object &resize, const pybind11::object &crop, const pybind11::object &interpolation,
             const pybind11::object &dtype, const pybind11::object &weights);

} // namespace polaformer_py
