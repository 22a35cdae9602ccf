#include "errors.h"

#include <polaformer/polaformer.hpp>

namespace py = pybind11;

namespace polaformer_py {

namespace {

// Owned for the life of the process: the translator may run at any time
// before interpreter shutdown, and a static py::object would be destroyed
// after the interpreter is gone.
PyObject *g_input_error = nullptr;
PyObject *g_internal_error = nullptr;

PyObject *make_type(py::module_ &m, const char *name, py::tuple bases, const char *doc) {
  py::dict body;
  body["__doc__"] = doc;
  body["__module__"] = "polaformer";
  py::object type = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(&PyType_Type))(name, bases, body);
  m.attr(name) = type;
  return type.release().ptr();
}

} // namespace

void register_errors(py::module_ &m) {
  py::object base = py::reinterpret_steal<py::object>(
      make_type(m, "Error", py::make_tuple(py::reinterpret_borrow<py::object>(PyExc_Exception)),
                "Base class of the errors polaformer raises."));
  g_input_error = make_type(m, "InputError", py::make_tuple(base, py::reinterpret_borrow<py::object>(PyExc_ValueError)),
                            "A bad file, argument or array (the message names it); also a ValueError.");
  g_internal_error =
      make_type(m, "InternalError", py::make_tuple(base, py::reinterpret_borrow<py::object>(PyExc_RuntimeError)),
                "A bug in the engine or resources exhausted; also a RuntimeError.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const polaformer::InputError &e) {
      PyErr_SetString(g_input_error, e.what());
    } catch (const polaformer::InternalError &e) {
      PyErr_SetString(g_internal_error, e.what());
    }
  });
}

void throw_input_error(const std::string &message) { throw polaformer::InputError(message); }

void raise_input_error(const std::string &message, const py::dict &attributes) {
  py::object error = py::reinterpret_borrow<py::object>(g_input_error)(message);
  for (const auto &[name, value] : attributes) error.attr(name) = value;
  PyErr_SetObject(g_input_error, error.ptr());
  throw py::error_already_set();
}

} // namespace polaformer_py
