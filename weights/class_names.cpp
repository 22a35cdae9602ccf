#include "weights/class_names.h"

#include <sstream>

namespace pola::weights {

extern const char *const kImagenetClassesText; // imagenet_classes.cpp (generated)

const std::vector<std::string> &imagenet_class_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    std::istringstream in(kImagenetClassesText);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) v.push_back(line);
    return v;
  }();
  return names;
}

std::vector<std::string> default_class_names(int64_t num_classes) {
  if (num_classes == 1000 && imagenet_class_names().size() == 1000) return imagenet_class_names();
  std::vector<std::string> v;
  for (int64_t i = 0; i < num_classes; ++i) v.push_back("class_" + std::to_string(i));
  return v;
}

} // namespace pola::weights
