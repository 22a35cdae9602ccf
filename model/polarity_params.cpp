#include "model/polarity_params.h"

#include <cmath>

namespace pola {

double polarity_exponent(double alpha, double power) { return 1.0 + alpha * (1.0 / (1.0 + std::exp(-power))); }

// softplus(x) = log(1 + e^x), taken as x above 20 like PyTorch's softplus
// (threshold 20), which the reference uses; exp would overflow for large x.
double inverse_softplus(double scale) { return 1.0 / (scale > 20.0 ? scale : std::log1p(std::exp(scale))); }

} // namespace pola
