#include "polarity_row.h"

#include <cmath>
#include <stdexcept>

#include "model/polarity_params.h"

namespace pola::attention_map {
namespace {

// relu(u)^p with 0 staying exactly 0 (SPEC 8).
double relu_pow(double u, double p) { return u > 0 ? std::exp(p * std::log(u)) : 0.0; }

} // namespace

std::vector<double> polarity_attention_row(const PolarityParams &P, const float *q,
                                           const std::vector<const float *> &keys,
                                           const std::vector<const float *> &pos) {
  const int64_t n = static_cast<int64_t>(keys.size()), d = P.head_dim, C = int64_t(P.heads) * d;
  if (n == 0 || pos.size() != keys.size()) throw std::logic_error("polarity_attention_row: bad key set");
  std::vector<double> inv_s(C), p(C), q_pos(C), q_neg(C);
  for (int64_t c = 0; c < C; ++c) {
    inv_s[c] = inverse_softplus(P.scale[c]);
    p[c] = polarity_exponent(P.alpha, P.power[c]);  // power is (1, h, 1, d): index head*d + j == c
    q_pos[c] = relu_pow(q[c] * inv_s[c], p[c]);
    q_neg[c] = relu_pow(-q[c] * inv_s[c], p[c]);
  }
  std::vector<double> map(n, 0.0), sim(n), opp(n);
  for (int head = 0; head < P.heads; ++head) {
    double sim_sum = 0, opp_sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, o = 0;
      for (int64_t c = head * d; c < (head + 1) * d; ++c) {
        const double k = (double(keys[j][c]) + pos[j][c]) * inv_s[c];
        const double k_pos = relu_pow(k, p[c]), k_neg = relu_pow(-k, p[c]);
        s += q_pos[c] * k_pos + q_neg[c] * k_neg;  // q_sim . phi_k
        o += q_neg[c] * k_pos + q_pos[c] * k_neg;  // q_opp . phi_k
      }
      sim[j] = s;
      opp[j] = o;
      sim_sum += s;
      opp_sum += o;
    }
    for (int64_t j = 0; j < n; ++j) {
      const double a_sim = sim_sum > 0 ? sim[j] / sim_sum : 1.0 / n;
      const double a_opp = opp_sum > 0 ? opp[j] / opp_sum : 1.0 / n;
      map[j] += (a_sim + a_opp) / (2.0 * P.heads);
    }
  }
  return map;
}

} // namespace pola::attention_map
