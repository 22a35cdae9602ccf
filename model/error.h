// Error types shared by every layer. InputError means the user's input (a file,
// an argument, an array) is wrong: the CLI exits 1. Any other exception is an
// internal error: exit 2. It lives in model/, the lowest layer that throws it;
// weights/error.h includes this so every layer names it the same way.
#pragma once

#include <stdexcept>
#include <string>

namespace pola {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string &what) : std::runtime_error(what) {}
};

// Throws the InputError "<path>: <what>", the form every file problem takes.
[[noreturn]] inline void fail_in_file(const std::string &path, const std::string &what) {
  throw InputError(path + ": " + what);
}

} // namespace pola
