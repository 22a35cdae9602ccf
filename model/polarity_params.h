// The polarity block's stored parameters become what the attention uses
// (SPEC section 3, step 3), computed in double precision:
//   p = 1 + alpha * sigmoid(power)   the feature-map exponent, 1 < p < 1 + alpha
//   1 / softplus(scale)              q and k are divided by softplus(scale)
// The engine applies them once at load; the attention-map tool per query.
#pragma once

namespace pola {

double polarity_exponent(double alpha, double power);
double inverse_softplus(double scale);

} // namespace pola
