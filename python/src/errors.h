// The Python exceptions of the binding: polaformer.Error, with
// polaformer.InputError (also a ValueError: a bad file, argument or array)
// and polaformer.InternalError (also a RuntimeError). Engine failures
// (polaformer::InputError / InternalError from polaformer.hpp) arrive as
// these, with the engine's message.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

namespace polaformer_py {

// Creates the exception types in `m` and registers the translation of the
// C++ API's exceptions to them.
void register_errors(pybind11::module_ &m);

// Raise polaformer.InputError from C++ (a C++ exception the translator maps).
[[noreturn]] void throw_input_error(const std::string &message);

// Raise polaformer.InputError carrying attributes (the GIL held), e.g. the
// results Model.classify still has when some images failed.
[[noreturn]] void raise_input_error(const std::string &message, const pybind11::dict &attributes);

} // namespace polaformer_py
