#include "prediction.h"

namespace py = pybind11;

namespace polaformer_py {

namespace {

// A struct sequence (as os.stat_result): two items in the tuple, the index an attribute only.
PyStructSequence_Field kFields[] = {
    {"class_name", "the class's name, Model.classes[index]"},
    {"prob", "its softmax probability (the double `pola classify --json` prints)"},
    {"index", "the class's index in Model.classes (its logit's position)"},
    {nullptr, nullptr}};

PyStructSequence_Desc kDesc = {
    "polaformer.Prediction",
    "One class of Model.classify's answer: the pair (class_name, prob), with .index, the class's\n"
    "position in Model.classes (names need not be unique).",
    kFields, 2};

// Owned for the life of the process, as the error types (errors.cpp).
PyTypeObject *g_type = nullptr;

} // namespace

void register_prediction(py::module_ &m) {
  g_type = PyStructSequence_NewType(&kDesc);
  if (g_type == nullptr) throw py::error_already_set();
  m.attr("Prediction") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(g_type));
}

py::object make_prediction(const std::string &class_name, double prob, int index) {
  py::object name = py::str(class_name), p = py::float_(prob), i = py::int_(index);
  PyObject *obj = PyStructSequence_New(g_type);
  if (obj == nullptr) throw py::error_already_set();
  PyStructSequence_SetItem(obj, 0, name.release().ptr());
  PyStructSequence_SetItem(obj, 1, p.release().ptr());
  PyStructSequence_SetItem(obj, 2, i.release().ptr());
  return py::reinterpret_steal<py::object>(obj);
}

} // namespace polaformer_py
