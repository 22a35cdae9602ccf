// The polarity cores' feature maps (FeatureMap, attention_args.h) as
// policies the passes are templated on, chosen once per call by
// with_feature_map, which refuses a kind it does not know. A policy gives
// f(|u|) lane by lane, 0 where the map is 0 and on pad lanes; the passes do
// the sign split. band(ch, n) loads the per-channel parameters of channels
// [ch, ch + n) once, apply(band, u) maps one vector of u over them.
#pragma once

#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/refuse.h"
#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

// abs_pow: |u|^p (common.hpp), p = power[channel].
template <class A> struct AbsPowFeature {
  const float *power;
  Vec<A> band(int64_t ch, int n) const { return load_first<A>(power + ch, n); }
  Vec<A> apply(const Vec<A> &p, const Vec<A> &u) const { return abs_pow<A>(u, p); }
};

// exp_sigmoid (PolaFormer++): exp(m) - 1 of a weighted magnitude m >= 0, an
// fp32 exp and then the subtraction, not expm1, as the original computes it
// (SPEC-polaformerpp T1). Not a band/apply policy: RoPE mixes neighbouring
// features and the two query paths have their own weights, so this kind runs
// the dense passes (pola_rope_passes.hpp), which read the weights themselves.
template <class A> struct ExpSigmoidFeature {
  const float *sigma_same, *sigma_opp; // (heads * 2d) each
  static Vec<A> exp_minus_one(const Vec<A> &m) { return exp_fp32<A>(m) - Vec<A>(1.0f); }
};

// run(policy) with the policy of m's kind.
template <class A, class F> void with_feature_map(const FeatureMap &m, F &&run) {
  switch (m.kind) {
  case FeatureKind::abs_pow: return run(AbsPowFeature<A>{m.power});
  case FeatureKind::exp_sigmoid: return run(ExpSigmoidFeature<A>{m.sigma_same, m.sigma_opp});
  }
  refuse_feature_map("polarity_attention fp32", m);
}

} // namespace pola::kernels::simd
