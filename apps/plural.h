// "1 image", "2 images": counts in messages read as English whatever the count.
// Header-only: apps/CMakeLists.txt builds the cmd_*.cpp files and nothing else.
#pragma once

#include <string>

namespace pola::app {

// `n` followed by `singular`, or by `plural` (default: singular + "s") when n != 1.
inline std::string count_of(long long n, const std::string &singular, const std::string &plural = "") {
  return std::to_string(n) + " " + (n == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

} // namespace pola::app
