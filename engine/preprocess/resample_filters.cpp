#include "engine/preprocess/resample_filters.h"

#include <cmath>

namespace pola::preprocess {
namespace {

// Piecewise cubic, in the Horner form PIL evaluates it in: the coefficients
// are later rounded to 22-bit fixed point, so a different but algebraically
// equal expression could flip a rounding and change an output pixel.
double bicubic_weight(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double bilinear_weight(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

} // namespace

const ResampleFilter kBicubicFilter{"bicubic", 2.0, bicubic_weight};
const ResampleFilter kBilinearFilter{"bilinear", 1.0, bilinear_weight};

} // namespace pola::preprocess
