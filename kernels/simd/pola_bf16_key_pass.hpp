// Key pass of the bf16 polarity core (pola_attention_bf16.hpp): per chunk of
// key tokens, KV (2d x d) += phi_k^T v in bf16 with fp32 accumulation (the
// product policy P of pola_bf16_products.hpp: AMX tiles or AVX512-BF16 dot
// products), and ksum = sum phi_k in fp32.
//
// Both products reduce over bf16 pairs of their k dimension, here the tokens, so one operand
// must be token-minor: phi_k is built channel-major (phiT, 2d rows of a block's
// tokens) from a 16 x 16 register transpose of the signed magnitudes, and v
// goes into VNNI rows (token pairs interleaved). Dense: phi_k's zeros are
// multiplied too (2d rows, not the fp32 core's d), which the tiles' throughput
// pays for many times over (vdpbf16ps: twice the products per instruction of
// an fp32 FMA, so the same instruction count as the fp32 core's d rows,
// without its per-token sign-pattern bookkeeping).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/scratch.h"
#include "kernels/simd/pola_bf16_feature_map.hpp"
#include "kernels/simd/pola_attention_common.hpp"
#include "kernels/simd/pola_bf16_tiles.hpp"

namespace pola::kernels::simd::bf16_detail {

constexpr int64_t kKeyBlock = 128; // key tokens per tile pass: 4 k steps of 32

// Loads 16 floats of a row (n <= 16 valid, the rest zero).
POLA_BF16_TARGET inline __m512 load_part(const float *p, int n) {
  return n >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p);
}

// How far ahead (tokens) the key pass prefetches k, v and pos_enc: each
// 16 x 16 feature tile fetches its own lines of the rows that far on, so the
// prefetches are spread over the arithmetic (a burst of a whole block's rows
// stalls on the line fill buffers). 16, the next feature tile of the same
// channels: the lines of 32 tokens on (128 KB of k and v in between) left a
// 48 KB L1 before use, and 16 measured faster than 32 (figures:
// bench/attention/README.md).
constexpr int64_t kKeyPrefetchTokens = 16;

// Features of 16 tokens x 16 channels of one head, transposed: phiT rows
// jc + c (pos) and d + jc + c (neg) get the 16 tokens at column tt;
// ksum (pos at [0, d), neg at [d, 2d)) accumulates them in fp32, token-major
// before the transpose (lanes are channels there). Prefetches the same lines of
// k, v, pos_enc kKeyPrefetchTokens on (below t_end).
template <class Phi>
POLA_BF16_TARGET inline void key_features16(const PolarityAttnArgs &a, const Phi &phi, const Bf16Layout &lay, int64_t tok0, int ntok,
                                            int64_t t_end, int64_t c0, int jc, int nch, uint16_t *phit,
                                            int64_t tt, float *ksum) {
  const int64_t width = int64_t(a.heads) * lay.d;
  const V isc(load_part(a.inv_scale + c0 + jc, nch)), pw(phi.band(c0 + jc, nch));
  const __m512 sign = _mm512_set1_ps(-0.0f), zero = _mm512_setzero_ps();
  __m512 r[16], ks_pos = zero, ks_neg = zero;
  for (int i = 0; i < 16; ++i) {
    if (i >= ntok) {
      r[i] = zero;
      continue;
    }
    const int64_t tok = tok0 + i, ahead = tok + kKeyPrefetchTokens;
    if (ahead < t_end) {
      _mm_prefetch(reinterpret_cast<const char *>(a.k + ahead * a.ld_k + c0 + jc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char *>(a.v + ahead * a.ld_v + c0 + jc), _MM_HINT_T0);
      if (a.pos_enc) _mm_prefetch(reinterpret_cast<const char *>(a.pos_enc + ahead * width + c0 + jc), _MM_HINT_T0);
    }
    V u(load_part(a.k + tok * a.ld_k + c0 + jc, nch));
    if (a.pos_enc) u += V(load_part(a.pos_enc + tok * width + c0 + jc, nch));
    u *= isc;
    const V m(phi.apply(pw, u)); // 0 on pad lanes
    r[i] = _mm512_or_ps(m, _mm512_and_ps(u, sign)); // f(|k'|) with k''s sign
    const __mmask16 neg = _mm512_cmp_ps_mask(u, zero, _CMP_LT_OQ); // a -0 or a pad lane has m = 0
    ks_pos = _mm512_mask_add_ps(ks_pos, __mmask16(~neg), ks_pos, m);
    ks_neg = _mm512_mask_add_ps(ks_neg, neg, ks_neg, m);
  }
  const __mmask16 lanes = __mmask16((1u << nch) - 1);
  _mm512_mask_storeu_ps(ksum + jc, lanes, _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, ksum + jc), ks_pos));
  _mm512_mask_storeu_ps(ksum + lay.d + jc, lanes,
                        _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, ksum + lay.d + jc), ks_neg));
  transpose16(r);
  for (int c = 0; c < nch; ++c) {
    const __m512 pos = _mm512_max_ps(r[c], zero), neg = _mm512_max_ps(_mm512_sub_ps(zero, r[c]), zero);
    const int64_t rp = jc + c, rn = lay.d + jc + c;
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(phit + rp * kKeyBlock + tt), to_bf16x16(pos));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(phit + rn * kKeyBlock + tt), to_bf16x16(neg));
  }
}

// v rows of tokens tok0 + 2p, tok0 + 2p + 1 (zero past ntok) of one head into VNNI row p.
POLA_BF16_TARGET inline void value_pairs(const PolarityAttnArgs &a, const Bf16Layout &lay, int64_t tok0, int ntok,
                                         int64_t c0, uint16_t *vnni) {
  const __m512 zero = _mm512_setzero_ps();
  for (int p = 0; 2 * p < 16; ++p) {
    const int i0 = 2 * p, i1 = 2 * p + 1;
    const float *v0 = a.v + (tok0 + i0) * a.ld_v + c0, *v1 = a.v + (tok0 + i1) * a.ld_v + c0;
    uint16_t *dst = vnni + p * 2 * lay.np;
    for (int jc = 0; jc < lay.d; jc += 16) {
      const int nch = std::min(16, lay.d - jc);
      store_pair(i0 < ntok ? load_part(v0 + jc, nch) : zero, i1 < ntok ? load_part(v1 + jc, nch) : zero,
                 dst + 2 * jc);
    }
  }
}

// Accumulates key tokens [t0, t1) of heads [h0, h1) into their states
// (lay.state floats each: KV kp x np, then ksum kp).
template <class P, class Phi>
POLA_BF16_TARGET inline void key_chunk(const PolarityAttnArgs &a, const Phi &phi, const Bf16Layout &lay, int64_t t0, int64_t t1,
                                       int h0, int h1, float *states) {
  const int d = lay.d, group = h1 - h0;
  const int64_t phit_head = lay.kp * kKeyBlock, vnni_head = kKeyBlock * lay.np;
  ScratchBuffer phit_buf(group * phit_head / 2), vnni_buf(group * vnni_head / 2);
  uint16_t *phit = reinterpret_cast<uint16_t *>(phit_buf.data);
  uint16_t *vnni = reinterpret_cast<uint16_t *>(vnni_buf.data);
  for (int64_t b0 = t0; b0 < t1; b0 += kKeyBlock) {
    const int64_t tb = std::min(kKeyBlock, t1 - b0);
    const int ksteps = int((tb + 31) / 32); // columns past them are never read
    for (int64_t tt = 0; tt < 32 * ksteps; tt += 16) {
      const int ntok = int(std::clamp<int64_t>(tb - tt, 0, 16));
      for (int g = 0; g < group; ++g) {
        const int64_t c0 = int64_t(h0 + g) * d;
        for (int jc = 0; jc < d; jc += 16)
          key_features16(a, phi, lay, b0 + tt, ntok, t1, c0, jc, std::min(16, d - jc), phit + g * phit_head, tt,
                         states + (h0 + g) * lay.state + lay.kp * lay.np);
        value_pairs(a, lay, b0 + tt, ntok, c0, vnni + g * vnni_head + tt / 2 * 2 * lay.np);
      }
    }
    memory_barrier();
    for (int g = 0; g < group; ++g) {
      P::product(phit + g * phit_head, kKeyBlock, vnni + g * vnni_head, lay.np, lay.kp, 16 * ksteps,
                 states + (h0 + g) * lay.state, false);
    }
  }
}

} // namespace pola::kernels::simd::bf16_detail
