// Class names written into model files: the ImageNet-1k names (embedded in the
// binary from weights/imagenet_classes.txt) for 1000-class models, otherwise
// "class_0", "class_1", ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pola::weights {

const std::vector<std::string> &imagenet_class_names();
std::vector<std::string> default_class_names(int64_t num_classes);

} // namespace pola::weights
