// Out of line so that the ISA translation units throw through one plain function.
#include "kernels/refuse.h"

#include <stdexcept>
#include <string>

namespace pola::kernels {

void refuse(const char *kernel, const char *why) {
  throw std::invalid_argument(std::string("kernel ") + kernel + " refuses: " + why);
}

void refuse_feature_map(const char *kernel, const FeatureMap &m) {
  throw std::invalid_argument(std::string("kernel ") + kernel + " refuses: unknown feature map kind " +
                              std::to_string(static_cast<int>(m.kind)));
}

} // namespace pola::kernels
