// Polarity-aware linear attention (SPEC section 3, steps 2-7), scalar.
//
// Key side, per head, one pass over the key tokens:
//   k' = (k + pos_enc) * inv_scale,  phi_k = [f(relu(k')), f(relu(-k'))]   (2d)
// (f: the feature map of args.feature, ScalarFeature; abs_pow: f(m) = m^p)
//   KV   = sum_t phi_k[t]^T v[t]   (2d x d, columns [v1 | v2])
//   ksum = sum_t phi_k[t]          (2d)
// accumulated in double (this file is the oracle for the SIMD kernels), then
// divided by n: (phi^T n^-1/2)(v n^-1/2) = phi^T v / n and kmean = ksum / n.
// Query side, per token and head, with q_sim = [pos(q'), neg(q')]:
//   x_sim = (q_sim @ KV1) / (q_sim . kmean + 1e-6)
//   x_opp = (q_opp @ KV2) / (q_opp . kmean + 1e-6),  q_opp = [neg(q'), pos(q')]
// Every sum runs in a fixed order, so the result does not depend on threads.
#include "kernels/reference/reference.h"

#include <cmath>
#include <vector>

#include "kernels/refuse.h"

namespace pola::kernels::reference {

ScalarFeature::ScalarFeature(const FeatureMap &m) : map(m) {
  if (!known_feature_map(m)) refuse_feature_map("polarity_attention scalar", m);
}

// abs_pow: relu(x)^p computed as exp(p log x) only for x > 0 (SPEC section 8).
float ScalarFeature::operator()(float x, int64_t channel) const {
  switch (map.kind) {
  case FeatureKind::abs_pow: return x > 0.0f ? std::exp(map.power[channel] * std::log(x)) : 0.0f;
  }
  return 0.0f; // not reached: the constructor refused other kinds
}

namespace {

// Per-head normalised state: KV / n (2d x d) and kmean (2d), in double.
struct HeadState {
  std::vector<double> kv, kmean;
};

HeadState key_state(const PolarityAttnArgs &a, const ScalarFeature &phi_of, int head) {
  const int d = a.head_dim;
  const int64_t c0 = int64_t(head) * d;
  const int64_t width = int64_t(a.heads) * d;
  HeadState s{std::vector<double>(size_t(2 * d) * d, 0.0), std::vector<double>(2 * d, 0.0)};
  std::vector<double> phi(2 * d);
  for (int64_t t = 0; t < a.n_k; ++t) {
    const float *k = a.k + t * a.ld_k + c0;
    const float *v = a.v + t * a.ld_v + c0;
    for (int j = 0; j < d; ++j) {
      float u = k[j];
      if (a.pos_enc) u += a.pos_enc[t * width + c0 + j];
      u *= a.inv_scale[c0 + j];
      phi[j] = phi_of(u, c0 + j);
      phi[d + j] = phi_of(-u, c0 + j);
    }
    for (int r = 0; r < 2 * d; ++r) {
      s.kmean[r] += phi[r];
      if (phi[r] == 0.0) continue; // half of phi_k is zero by construction
      double *row = s.kv.data() + size_t(r) * d;
      for (int c = 0; c < d; ++c) row[c] += phi[r] * double(v[c]);
    }
  }
  const double inv_n = a.n_k > 0 ? 1.0 / double(a.n_k) : 0.0;
  for (double &x : s.kv) x *= inv_n;
  for (double &x : s.kmean) x *= inv_n;
  return s;
}

} // namespace

void polarity_attention(const PolarityAttnArgs &a) {
  const ScalarFeature phi_of(a.feature);
  const int d = a.head_dim, half = d / 2;
  std::vector<HeadState> states(a.heads);
#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1 && a.heads > 1) schedule(static, 1)
  for (int h = 0; h < a.heads; ++h) states[h] = key_state(a, phi_of, h);

#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1) schedule(static)
  for (int64_t t = 0; t < a.n_q; ++t) {
    std::vector<double> q_sim(2 * d);
    for (int h = 0; h < a.heads; ++h) {
      const int64_t c0 = int64_t(h) * d;
      const float *q = a.q + t * a.ld_q + c0;
      for (int j = 0; j < d; ++j) {
        const float u = q[j] * a.inv_scale[c0 + j];
        q_sim[j] = phi_of(u, c0 + j);
        q_sim[d + j] = phi_of(-u, c0 + j);
      }
      const HeadState &s = states[h];
      // q_opp[r] = q_sim[(r + d) mod 2d].
      double den_sim = 0.0, den_opp = 0.0;
      for (int r = 0; r < 2 * d; ++r) {
        den_sim += q_sim[r] * s.kmean[r];
        den_opp += q_sim[(r + d) % (2 * d)] * s.kmean[r];
      }
      const double f_sim = 1.0 / (den_sim + 1e-6), f_opp = 1.0 / (den_opp + 1e-6);
      float *o = a.out + t * a.ld_out + c0;
      for (int c = 0; c < d; ++c) {
        const bool sim = c < half; // columns [0, d/2) are v1, the rest v2
        double acc = 0.0;
        for (int r = 0; r < 2 * d; ++r) {
          const double qr = sim ? q_sim[r] : q_sim[(r + d) % (2 * d)];
          acc += qr * s.kv[size_t(r) * d + c];
        }
        o[c] = float(acc * (sim ? f_sim : f_opp));
      }
    }
  }
}

} // namespace pola::kernels::reference
