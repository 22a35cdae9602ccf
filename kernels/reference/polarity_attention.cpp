// Polarity-aware linear attention (SPEC section 3, steps 2-7), scalar, in
// fp32 (polarity_attention) and with its two products in bf16
// (polarity_attention keyed bf16). One loop nest serves both: the keyed
// dtypes differ only in how a product operand, the query state M and kmean
// are held, which a rounding policy (Fp32Rounding, Bf16Rounding) says.
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
// The exp_sigmoid map has its own loops (polarity_attention_rope.cpp); the
// bf16 keying refuses it.
//
// Keyed bf16, the oracle of the AMX and AVX512-BF16 cores
// (simd/pola_attention_bf16.hpp), following what those document:
//   key side:   KV = sum_t bf16(phi_k[t])^T bf16(v[t]), summed in double;
//               ksum = sum_t phi_k[t] of the unrounded features, in double;
//   state:      M = bf16(KV / n) (the rows [KV1 | swap_rows(KV2)] of the fp32
//               algebra), kmean = ksum / n in fp32;
//   query side: out = bf16(q_sim) @ M summed in double, scaled by
//               1 / (q_sim . kmean + 1e-6) with the unrounded features.
// The features are the fp32 ones (ScalarFeature, exact to fp32); the SIMD
// cores compute them to 1.2e-4 relative before rounding them, so a feature
// next to a rounding midpoint may round the other way there.
#include "kernels/reference/reference.h"

#include <cmath>
#include <vector>

#include "kernels/refuse.h"
#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels::reference {

ScalarFeature::ScalarFeature(const FeatureMap &m) : map(m) {
  if (!known_feature_map(m)) refuse_feature_map("polarity_attention scalar", m);
}

// abs_pow: relu(x)^p computed as exp(p log x) only for x > 0 (SPEC section 8).
// exp_sigmoid: exp(relu(x)) - 1 in fp32, the caller having applied the path's
// weight to x (polarity_attention_rope.cpp).
float ScalarFeature::operator()(float x, int64_t channel) const {
  switch (map.kind) {
  case FeatureKind::abs_pow: return x > 0.0f ? std::exp(map.power[channel] * std::log(x)) : 0.0f;
  case FeatureKind::exp_sigmoid: return x > 0.0f ? std::exp(x) - 1.0f : 0.0f;
  }
  return 0.0f; // not reached: the constructor refused other kinds
}

namespace {

// fp32: every value exact in double; the oracle of the fp32 cores and the
// fp32 path on CPUs without AVX2.
struct Fp32Rounding {
  // A zero feature's KV row is skipped: half of phi_k is zero by construction,
  // and adding 0 * v changes no sum while v is finite.
  static constexpr bool skip_zero_features = true;
  static double operand(float x) { return x; }    // a product's operand
  static double state(double x) { return x; }     // an entry of M = KV / n
  static double kmean(double x) { return x; }     // an entry of ksum / n
};

// bf16 products: operands and M rounded to bf16 (nearest even) as the cores
// store them, kmean held in fp32 as they hold it. Every KV row is multiplied,
// as the cores' tile products do, so a non-finite v is not skipped over.
struct Bf16Rounding {
  static constexpr bool skip_zero_features = false;
  static double operand(float x) { return double(bf16_to_float(bf16_rne(x))); }
  static double state(double x) { return operand(float(x)); }
  static double kmean(double x) { return float(x); }
};

// One head's query state: M (2d x d) and kmean (2d), as R holds them.
struct HeadState {
  std::vector<double> m, kmean;
};

template <class R>
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
      ksum[r] += phi[r]; // the unrounded feature in both keyings
      const double p = R::operand(phi[r]);
      if (R::skip_zero_features && p == 0.0) continue;
      double *row = kv.data() + size_t(r) * d;
      for (int c = 0; c < d; ++c) row[c] += p * R::operand(v[c]);
    }
  }
  const double inv_n = a.n_k > 0 ? 1.0 / double(a.n_k) : 0.0;
  HeadState s{std::vector<double>(kv.size()), std::vector<double>(2 * d)};
  for (size_t i = 0; i < kv.size(); ++i) s.m[i] = R::state(kv[i] * inv_n);
  for (int r = 0; r < 2 * d; ++r) s.kmean[r] = R::kmean(ksum[r] * inv_n);
  return s;
}

template <class R>
void polarity_core(const PolarityAttnArgs &a) {
  const ScalarFeature phi_of(a.feature);
  const int d = a.head_dim, half = d / 2;
  std::vector<HeadState> states(a.heads);
#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1 && a.heads > 1) schedule(static, 1)
  for (int h = 0; h < a.heads; ++h) states[h] = head_state<R>(a, phi_of, h);

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
      // q_opp[r] = q_sim[(r + d) mod 2d]; the denominators use the unrounded features.
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
        for (int r = 0; r < 2 * d; ++r)
          acc += R::operand(sim ? q_sim[r] : q_sim[(r + d) % (2 * d)]) * s.m[size_t(r) * d + c];
        o[c] = float(acc * (sim ? f_sim : f_opp));
      }
    }
  }
}

} // namespace

void polarity_attention(const PolarityAttnArgs &a) {
  if (a.feature.kind == FeatureKind::exp_sigmoid) return polarity_attention_exp_sigmoid(a);
  polarity_core<Fp32Rounding>(a);
}
void polarity_attention_bf16(const PolarityAttnArgs &a) {
  if (a.feature.kind == FeatureKind::exp_sigmoid)
    refuse("polarity_attention bf16 scalar", "exp_sigmoid runs in fp32 only (SPEC-polaformerpp T1)");
  polarity_core<Bf16Rounding>(a);
}

} // namespace pola::kernels::reference
