// Query pass of the bf16 polarity core (pola_attention_bf16.hpp): per block
// of query tokens, the features q_sim = [f(pos(q')), f(neg(q'))] as bf16 rows,
// q_sim @ M in bf16 (M in VNNI rows, fp32 accumulation; the product policy
// P of pola_bf16_products.hpp: AMX tiles or AVX512-BF16 dot products), then the
// fp32 denominators (computed with the features, as in the fp32 core) and the
// normalisation.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/scratch.h"
#include "kernels/simd/pola_bf16_feature_map.hpp"
#include "kernels/simd/pola_attention_common.hpp"
#include "kernels/simd/pola_bf16_key_pass.hpp"
#include "kernels/simd/pola_bf16_tiles.hpp"

namespace pola::kernels::simd::bf16_detail {

constexpr int64_t kQueryBlock = 64; // query tokens per block: 4 tile rows of 16

// Per-thread scratch of query_block, allocated once per call and thread.
// den_parts: per head and token, the 16-lane partial sums of the two
// denominators (sim, opp); den: per head, the factors 1 / (den + eps) of the
// block's tokens, sim then opp (kQueryBlock each).
struct QueryScratch {
  ScratchBuffer phiq, ob, den_parts, den;
  QueryScratch(const Bf16Layout &lay, int heads)
      : phiq(heads * kQueryBlock * lay.kp / 2), ob(heads * kQueryBlock * lay.np),
        den_parts(heads * kQueryBlock * 2 * 16), den(heads * kQueryBlock * 2) {}
};

// The factors 1 / (den + eps) of one head's block from its partial sums
// (tokens [0, tb); the rest of a 16-token group is zeroed first).
POLA_BF16_TARGET inline void denominator_factors(float *parts, int64_t tb, float *f) {
  const __m512 eps = _mm512_set1_ps(pola_detail::kDenominatorEps), one = _mm512_set1_ps(1.0f);
  for (int64_t t = tb; t % 16 != 0; ++t)
    for (int k = 0; k < 2; ++k) _mm512_store_ps(parts + (t * 2 + k) * 16, _mm512_setzero_ps());
  for (int64_t t0 = 0; t0 < tb; t0 += 16)
    for (int k = 0; k < 2; ++k) {
      __m512 v[16];
      for (int i = 0; i < 16; ++i) v[i] = _mm512_load_ps(parts + ((t0 + i) * 2 + k) * 16);
      _mm512_store_ps(f + k * kQueryBlock + t0, _mm512_div_ps(one, _mm512_add_ps(lane_sums16(v), eps)));
    }
}

template <class P, class Phi>
POLA_BF16_TARGET inline void query_block(const PolarityAttnArgs &a, const Phi &phi, const Bf16Layout &lay, const float *states_m,
                                         int64_t t0, int64_t t1, bool stream_out, QueryScratch &s) {
  const int d = lay.d, half = lay.half, heads = a.heads;
  const int64_t tb = t1 - t0, phiq_head = kQueryBlock * lay.kp, ob_head = kQueryBlock * lay.np;
  uint16_t *phiq = reinterpret_cast<uint16_t *>(s.phiq.data);
  const V zero(0.0f);
  for (int64_t t = 0; t < tb; ++t) {
    const bool fetch = t0 + t + pola_detail::kPrefetchTokens < a.n_q;
    for (int h = 0; h < heads; ++h) {
      const int64_t c0 = int64_t(h) * d;
      const float *q = a.q + (t0 + t) * a.ld_q + c0;
      const float *kmean = states_m + h * lay.qstate + lay.kp * lay.np / 2;
      uint16_t *row = phiq + h * phiq_head + t * lay.kp;
      V den_sim(0.0f), den_opp(0.0f);
      for (int j = 0; j < d; j += 16) {
        const int n = std::min(16, d - j);
        // One line of the row kPrefetchTokens on per 16 channels: spread over the arithmetic.
        if (fetch) _mm_prefetch(reinterpret_cast<const char *>(q + pola_detail::kPrefetchTokens * a.ld_q + j), _MM_HINT_T1);
        const __mmask16 lanes = __mmask16((1u << n) - 1);
        const V u = V(load_part(q + j, n)) * V(load_part(a.inv_scale + c0 + j, n));
        const V m(phi.apply(phi.band(c0 + j, n), u)); // 0 on pad lanes
        // One conversion, then each half keeps the lanes of its sign (bf16 zero is 0x0000).
        const __m256i mb = to_bf16x16(m);
        const __mmask16 neg_lanes = _mm512_cmp_ps_mask(u, zero, _CMP_LT_OQ);
        _mm256_mask_storeu_epi16(row + j, lanes, _mm256_maskz_mov_epi16(__mmask16(~neg_lanes), mb));
        _mm256_mask_storeu_epi16(row + d + j, lanes, _mm256_maskz_mov_epi16(neg_lanes, mb));
        const V km_pos(load_part(kmean + j, n)), km_neg(load_part(kmean + d + j, n));
        den_sim = xsimd::fma(m, V(_mm512_mask_blend_ps(neg_lanes, km_pos, km_neg)), den_sim);
        den_opp = xsimd::fma(m, V(_mm512_mask_blend_ps(neg_lanes, km_neg, km_pos)), den_opp);
      }
      float *parts = s.den_parts.data + (h * kQueryBlock + t) * 2 * 16;
      den_sim.store_aligned(parts);
      den_opp.store_aligned(parts + 16);
    }
  }
  for (int h = 0; h < heads; ++h)
    denominator_factors(s.den_parts.data + h * kQueryBlock * 2 * 16, tb, s.den.data + h * kQueryBlock * 2);
  memory_barrier();
  // Rows past tb hold an earlier block's (finite) features; their outputs are not read.
  for (int h = 0; h < heads; ++h)
    P::product(phiq + h * phiq_head, lay.kp, reinterpret_cast<const uint16_t *>(states_m + h * lay.qstate), lay.np,
               tb, lay.kp / 2, s.ob.data + h * ob_head, true);
  memory_barrier();
  // Per 16 output columns from c = 16i: the lanes of x_sim (column < d/2) take f_sim.
  __mmask16 sim_lanes[kMaxHeadDim / 16];
  for (int c = 0; c < d; c += 16)
    sim_lanes[c / 16] = __mmask16(half - c >= 16 ? 0xffff : half - c <= 0 ? 0 : (1u << (half - c)) - 1);
  for (int64_t t = 0; t < tb; ++t) {
    for (int h = 0; h < heads; ++h) {
      const float *o = s.ob.data + h * ob_head + t * lay.np;
      const float *fd = s.den.data + h * kQueryBlock * 2 + t;
      const V f_sim(fd[0]), f_opp(fd[kQueryBlock]);
      float *dst = a.out + (t0 + t) * a.ld_out + int64_t(h) * d;
      for (int c = 0; c < d; c += 16) {
        const V f = _mm512_mask_blend_ps(sim_lanes[c / 16], f_opp, f_sim);
        if (stream_out)
          store_stream<A>(dst + c, V::load_aligned(o + c) * f);
        else
          store_first<A>(dst + c, V::load_aligned(o + c) * f, d - c);
      }
    }
  }
}

} // namespace pola::kernels::simd::bf16_detail
