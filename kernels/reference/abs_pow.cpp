// |u|^p elementwise, 0 below FLT_MIN: the polarity feature map (SPEC section 8).
#include "kernels/reference/reference.h"

#include <cfloat>
#include <cmath>

namespace pola::kernels::reference {

void abs_pow(const float *u, const float *p, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double m = std::fabs(double(u[i]));
    y[i] = m >= double(FLT_MIN) ? float(std::pow(m, double(p[i]))) : 0.0f;
  }
}

} // namespace pola::kernels::reference
