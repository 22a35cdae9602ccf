// Parsing of comma-separated number options such as `--mean 0.5,0.5,0.5`.
// Header-only: apps/CMakeLists.txt builds the cmd_*.cpp files and nothing else.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "weights/error.h"

namespace pola::app {

// Every comma-separated field must be a whole number in C syntax ("0.5",
// "1e-3"); "0.5x", an empty field or a trailing comma are refused, naming the
// option, rather than silently read as something else. Range checks (finite,
// positive, how many) are the caller's.
inline std::vector<double> parse_number_list(const std::string &option, const std::string &text) {
  std::vector<double> out;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(',', begin);
    const std::string field = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    char *stop = nullptr;
    errno = 0;
    const double x = field.empty() ? 0 : std::strtod(field.c_str(), &stop);
    if (field.empty() || *stop != '\0' || field.find_first_of(" \t") != std::string::npos || errno == ERANGE)
      throw InputError(option + " " + text + ": '" + field + "' is not a number (expected comma-separated numbers, e.g. " +
                       option + " 0.5,0.5,0.5)");
    out.push_back(x);
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

} // namespace pola::app
