// Polarity linear attention with the exp_sigmoid feature map and optional
// RoPE (PolaFormer++, SPEC-polaformerpp 2.7), scalar: the oracle of the fp32
// dense core (simd/pola_rope_attention.hpp). Per head t, with q, k, v its
// d-wide slices and n tokens:
//   psi_m   = exp([k+, k-]) - 1                          (2d, fp32 features)
//   kmean   = (1/n) sum_m psi_m                           (un-rotated)
//   M       = (1/n) sum_m RoPE_m(psi_m) (outer) v_m       (2d x d)
//   phi_s   = exp([q+, q-] * sigma_same) - 1,  phi_o = exp([q-, q+] * sigma_opp) - 1
//   out_s   = (RoPE_n(phi_s) @ M[:, :d/2]) * 1 / (phi_s . kmean + 1e-6)
//   out_o   = (RoPE_n(phi_o) @ M[:, d/2:]) * 1 / (phi_o . kmean + 1e-6)
// The features are computed in fp32 (exp(x) - 1, as the kernels do); the
// rotations and every sum run in double, in a fixed order.
#include "kernels/reference/reference.h"

#include <cstddef>
#include <vector>

#include "kernels/refuse.h"

namespace pola::kernels::reference {

namespace {

// x (2d) rotated at token tok by the table, in double; x itself without one.
std::vector<double> rotate(const std::vector<float> &x, const RopeTable &rope, int64_t tok) {
  std::vector<double> y(x.begin(), x.end());
  if (!rope) return y;
  const float *cs = rope.cos + tok * rope.width, *sn = rope.sin + tok * rope.width;
  for (std::size_t i = 0; i + 1 < x.size(); i += 2) {
    y[i] = double(x[i]) * cs[i] - double(x[i + 1]) * sn[i];
    y[i + 1] = double(x[i + 1]) * cs[i + 1] + double(x[i]) * sn[i + 1];
  }
  return y;
}

struct HeadState {
  std::vector<double> m, kmean; // M (2d x d), kmean (2d)
};

HeadState head_state(const PolarityAttnArgs &a, const ScalarFeature &f, int head) {
  const int d = a.head_dim;
  const int64_t c0 = int64_t(head) * d;
  HeadState s{std::vector<double>(std::size_t(2 * d) * d, 0.0), std::vector<double>(2 * d, 0.0)};
  std::vector<float> psi(2 * d);
  for (int64_t t = 0; t < a.n_k; ++t) {
    const float *k = a.k + t * a.ld_k + c0;
    const float *v = a.v + t * a.ld_v + c0;
    for (int j = 0; j < d; ++j) {
      psi[j] = f(k[j], c0 + j);
      psi[d + j] = f(-k[j], c0 + j);
    }
    const std::vector<double> rot = rotate(psi, a.rope, t);
    for (int r = 0; r < 2 * d; ++r) {
      s.kmean[r] += psi[r];
      for (int c = 0; c < d; ++c) s.m[std::size_t(r) * d + c] += rot[r] * v[c];
    }
  }
  const double inv_n = a.n_k > 0 ? 1.0 / double(a.n_k) : 0.0;
  for (double &x : s.m) x *= inv_n;
  for (double &x : s.kmean) x *= inv_n;
  return s;
}

} // namespace

void polarity_attention_exp_sigmoid(const PolarityAttnArgs &a) {
  const ScalarFeature f(a.feature);
  if (!a.feature.sigma_same || !a.feature.sigma_opp)
    refuse("polarity_attention scalar", "exp_sigmoid without sigma_same / sigma_opp");
  if (!rope_fits(a)) refuse("polarity_attention scalar", "rope table not 2*head_dim wide or n_q != n_k");
  const int d = a.head_dim, half = d / 2;
  std::vector<HeadState> states(a.heads);
#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1 && a.heads > 1) schedule(static, 1)
  for (int h = 0; h < a.heads; ++h) states[h] = head_state(a, f, h);

#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1) schedule(static)
  for (int64_t t = 0; t < a.n_q; ++t) {
    std::vector<float> phi_s(2 * d), phi_o(2 * d);
    for (int h = 0; h < a.heads; ++h) {
      const int64_t c0 = int64_t(h) * d;
      const float *q = a.q + t * a.ld_q + c0;
      const float *ws = a.feature.sigma_same + 2 * c0, *wo = a.feature.sigma_opp + 2 * c0;
      // f(x * w) = exp(relu(x) * w) - 1 for a weight w > 0.
      for (int j = 0; j < d; ++j) {
        phi_s[j] = f(q[j] * ws[j], c0 + j);
        phi_s[d + j] = f(-q[j] * ws[d + j], c0 + j);
        phi_o[j] = f(-q[j] * wo[j], c0 + j);
        phi_o[d + j] = f(q[j] * wo[d + j], c0 + j);
      }
      const HeadState &s = states[h];
      double z_s = 0.0, z_o = 0.0;
      for (int r = 0; r < 2 * d; ++r) {
        z_s += double(phi_s[r]) * s.kmean[r];
        z_o += double(phi_o[r]) * s.kmean[r];
      }
      const double f_s = 1.0 / (z_s + 1e-6), f_o = 1.0 / (z_o + 1e-6);
      const std::vector<double> rs = rotate(phi_s, a.rope, t), ro = rotate(phi_o, a.rope, t);
      float *o = a.out + t * a.ld_out + c0;
      for (int c = 0; c < d; ++c) {
        const bool same = c < half; // columns [0, d/2) are the same-sign path
        const std::vector<double> &x = same ? rs : ro;
        double acc = 0.0;
        for (int r = 0; r < 2 * d; ++r) acc += x[r] * s.m[std::size_t(r) * d + c];
        o[c] = float(acc * (same ? f_s : f_o));
      }
    }
  }
}

} // namespace pola::kernels::reference
