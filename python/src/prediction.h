// polaformer.Prediction: one (class name, probability) pair of
// Model.classify. A tuple of those two, so `for name, prob in row` and
// comparisons with plain tuples work as before, with the class's index as a
// further attribute (what the JSON of `pola classify` calls "index": class
// names need not be unique, ImageNet's are not).
#pragma once

#include <string>

#include <pybind11/pybind11.h>

namespace polaformer_py {

void register_prediction(pybind11::module_ &m);

// A new Prediction (the GIL held).
pybind11::object make_prediction(const std::string &class_name, double prob, int index);

} // namespace polaformer_py
