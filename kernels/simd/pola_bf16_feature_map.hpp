// The bf16 polarity core's feature maps (FeatureMap, attention_args.h) as
// policies, at bf16 accuracy since their values are rounded to bf16 next:
// same interface as pola_feature_map.hpp (band(ch, n) loads channels
// [ch, ch + n)'s parameters once, apply(band, u) gives f(|u|), 0 on pad
// lanes) on plain AVX-512 registers. with_feature_map_bf16 refuses a kind it
// does not know, and exp_sigmoid (bf16_feature_map, attention_args.h).
#pragma once

#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/refuse.h"
#include "kernels/simd/abs_pow_bf16.hpp"
#include "kernels/simd/pola_bf16_tiles.hpp"

namespace pola::kernels::simd::bf16_detail {

// abs_pow: |u|^p by abs_pow_bf16 (relative error 1.2e-4), p = power[channel].
struct AbsPowFeatureBf16 {
  const float *power;
  POLA_BF16_TARGET __m512 band(int64_t ch, int n) const {
    return n >= 16 ? _mm512_loadu_ps(power + ch) : _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), power + ch);
  }
  POLA_BF16_TARGET __m512 apply(__m512 p, __m512 u) const { return abs_pow_bf16(u, p); }
};

template <class F> void with_feature_map_bf16(const FeatureMap &m, F &&run) {
  switch (m.kind) {
  case FeatureKind::abs_pow: return run(AbsPowFeatureBf16{m.power});
  case FeatureKind::exp_sigmoid:
    refuse("polarity_attention bf16", "exp_sigmoid runs in fp32 only (SPEC-polaformerpp T1)");
  }
  refuse_feature_map("polarity_attention bf16", m);
}

} // namespace pola::kernels::simd::bf16_detail
