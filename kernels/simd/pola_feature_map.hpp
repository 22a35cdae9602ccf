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

// run(policy) with the policy of m's kind.
template <class A, class F> void with_feature_map(const FeatureMap &m, F &&run) {
  switch (m.kind) {
  case FeatureKind::abs_pow: return run(AbsPowFeature<A>{m.power});
  }
  refuse_feature_map("polarity_attention fp32", m);
}

} // namespace pola::kernels::simd
