// The polarity core with its two products in bf16 (polarity_attention keyed
// bf16), scalar: the oracle of the AMX and AVX512-BF16 cores
// (simd/pola_attention_bf16.hpp), following what those document:
//   key side:   KV = sum_t bf16(phi_k[t])^T bf16(v[t]), summed in double;
//               ksum = sum_t phi_k[t] of the unrounded features, in double;
//   state:      M = bf16(KV / n) (the rows [KV1 | swap_rows(KV2)] of the fp32
//               reference's algebra), kmean = ksum / n in fp32;
//   query side: out = bf16(q_sim) @ M summed in double, scaled by
//               1 / (q_sim . kmean + 1e-6) with the unrounded features.
// The features are the fp32 reference's (ScalarFeature, exact to fp32); the
// SIMD cores compute them to 1.2e-4 relative before rounding them, so a
// feature next to a rounding midpoint may round the other way there.
#include "kernels/reference/reference.h"

#include <vector>

#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels::reference {

namespace {

double bf16(float x) { return double(bf16_to_float(bf16_rne(x))); }

// One head's query state: M (2d x d, bf16 values) and kmean (2d, fp32 values).
struct HeadState {
  std::vector<double> m, kmean;
};

HeadState head_state(const PolarityAttnArgs &a, const ScalarFeature &phi_of, int head) {
  const int d = a.head_dim;
  const int64_t c0 = int64_t(head) * d, width = int64_t(a.heads) * d;
  std::vector<double> kv(size_t(2 * d) * d, 0.0), ksum(2 * d, 0.0);
  std::vector<float> phi(2 * d);
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
      ksum[r] += phi[r];
      const double p = bf16(phi[r]);
      for (int c = 0; c < d; ++c) kv[size_t(r) * d + c] += p * bf16(v[c]);
    }
  }
  const double inv_n = a.n_k > 0 ? 1.0 / double(a.n_k) : 0.0;
  HeadState s{std::vector<double>(kv.size()), std::vector<double>(2 * d)};
  for (size_t i = 0; i < kv.size(); ++i) s.m[i] = bf16(float(kv[i] * inv_n));
  for (int r = 0; r < 2 * d; ++r) s.kmean[r] = float(ksum[r] * inv_n);
  return s;
}

} // namespace

void polarity_attention_bf16(const PolarityAttnArgs &a) {
  const ScalarFeature phi_of(a.feature);
  const int d = a.head_dim, half = d / 2;
  std::vector<HeadState> states(a.heads);
#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1 && a.heads > 1) schedule(static, 1)
  for (int h = 0; h < a.heads; ++h) states[h] = head_state(a, phi_of, h);

#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1) schedule(static)
  for (int64_t t = 0; t < a.n_q; ++t) {
    std::vector<float> q_sim(2 * d);
    for (int h = 0; h < a.heads; ++h) {
      const int64_t c0 = int64_t(h) * d;
      const float *q = a.q + t * a.ld_q + c0;
      for (int j = 0; j < d; ++j) {
        const float u = q[j] * a.inv_scale[c0 + j];
        q_sim[j] = phi_of(u, c0 + j);
        q_sim[d + j] = phi_of(-u, c0 + j);
      }
      const HeadState &s = states[h];
      // q_opp[r] = q_sim[(r + d) mod 2d]; the denominators use fp32 features.
      double den_sim = 0.0, den_opp = 0.0;
      for (int r = 0; r < 2 * d; ++r) {
        den_sim += double(q_sim[r]) * s.kmean[r];
        den_opp += double(q_sim[(r + d) % (2 * d)]) * s.kmean[r];
      }
      const double f_sim = 1.0 / (den_sim + 1e-6), f_opp = 1.0 / (den_opp + 1e-6);
      float *o = a.out + t * a.ld_out + c0;
      for (int c = 0; c < d; ++c) {
        const bool sim = c < half; // columns [0, d/2) are v1, the rest v2
        double acc = 0.0;
        for (int r = 0; r < 2 * d; ++r) acc += bf16(sim ? q_sim[r] : q_sim[(r + d) % (2 * d)]) * s.m[size_t(r) * d + c];
        o[c] = float(acc * (sim ? f_sim : f_opp));
      }
    }
  }
}

} // namespace pola::kernels::reference
