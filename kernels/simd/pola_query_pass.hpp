// Query pass of the polarity attention core (pola_attention.hpp): features,
// q_sim @ M by sign-pattern bands (or the gather where M fits in L1),
// denominators and normalisation, one block of query tokens at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/cache_sizes.h"
#include "kernels/attention_args.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"
#include "kernels/simd/pola_attention_common.hpp"
#include "kernels/simd/pola_query_gather.hpp"

namespace pola::kernels::simd::pola_detail {

// One query block of one head, as the sign-sorted product reads it: per
// token the magnitudes f(|q'|) (stride d); per channel a token mask (bit t
// set: q'_t < 0); the output rows (stride mp), accumulated in place.
struct QueryBlock {
  const float *mag;
  const uint64_t *neg; // d masks
  uint64_t valid;      // bits of the block's tokens
  int d;
  int64_t mp;
  float *out;
};

// out[t, col:col + V*L] += sum_i mag[t, c0 + i] * M[c0 + i + d * sign_i] for
// the tokens of sign pattern P over the band: the band's 2C rows of M stay
// in registers and each token touches only the rows of its signs.
template <class A, int C, int V, int P>
inline void query_band_pattern(const QueryBlock &qb, int c0, int64_t col,
                               const Vec<A> (&rows)[C][2][V]) {
  constexpr int L = kLanes<A>;
  // Locals, not qb's fields: the vector stores below may alias anything, so
  // the compiler would reload every field after each token.
  const float *const mag = qb.mag + c0;
  float *const out = qb.out + col;
  const int64_t d = qb.d, mp = qb.mp;
  for (uint64_t tokens = pattern_tokens<C, P>(qb.valid, qb.neg + c0); tokens; tokens &= tokens - 1) {
    const int64_t t = __builtin_ctzll(tokens);
    const float *mg = mag + t * d;
    float *o = out + t * mp;
    Vec<A> acc[V];
    for (int v = 0; v < V; ++v) acc[v] = Vec<A>::load_aligned(o + v * L);
    for (int i = 0; i < C; ++i) {
      const Vec<A> b(mg[i]);
      for (int v = 0; v < V; ++v) acc[v] = xsimd::fma(b, rows[i][(P >> i) & 1][v], acc[v]);
    }
    for (int v = 0; v < V; ++v) acc[v].store_aligned(o + v * L);
  }
}

template <class A, int C, int V, int... P>
inline void query_band_patterns(const QueryBlock &qb, int c0, int64_t col, const Vec<A> (&rows)[C][2][V],
                                std::integer_sequence<int, P...>) {
  (query_band_pattern<A, C, V, P>(qb, c0, col, rows), ...);
}

template <class A, int C, int V>
inline void query_band_tile(const QueryBlock &qb, const float *m, int c0, int64_t col) {
  constexpr int L = kLanes<A>;
  Vec<A> rows[C][2][V];
  for (int i = 0; i < C; ++i)
    for (int s = 0; s < 2; ++s)
      for (int v = 0; v < V; ++v) rows[i][s][v] = Vec<A>::load_aligned(m + (c0 + i + s * qb.d) * qb.mp + col + v * L);
  query_band_patterns<A, C, V>(qb, c0, col, rows, std::make_integer_sequence<int, (1 << C)>{});
}

// out (tokens x mp, zeroed) += q_sim @ M over one block of one head.
template <class A>
inline void query_accumulate(const QueryBlock &qb, const float *m) {
  for_each_band_tile<A>(qb.d, int(qb.mp / kLanes<A>), [&](auto c, auto v, int c0, int64_t col) {
    query_band_tile<A, decltype(c)::value, decltype(v)::value>(qb, m, c0, col);
  });
}

// Query tokens [t0, t1) of every head: features, q_sim @ M, normalisation.
// q rows are read whole (all heads) and out rows written whole, in memory
// order. The denominators q_sim . kmean and q_opp . kmean come with the
// features: for channel j, q_sim selects kmean[j] (pos) or kmean[d + j] (neg)
// and q_opp the other one.
// Per-thread scratch of query_block, allocated once per call and thread.
template <class A> struct QueryScratch {
  bool gather; // heads whose M fits in L1: pola_query_gather.hpp
  ScratchBuffer mag, signs, masks, offs, ob, den;
  QueryScratch(const Layout<A> &lay, int heads)
      : gather(gather_fits<A>(lay.d, lay.mp, l1d_bytes())), mag(heads * kQueryBlock * lay.d),
        signs(2 * heads * kQueryBlock * lay.words), masks(2 * 64 * lay.words),
        offs(gather ? heads * kQueryBlock * lay.d : 0), ob(heads * kQueryBlock * lay.mp),
        den(heads * kQueryBlock * 2) {}
};

template <class A, class Phi>
void query_block(const PolarityAttnArgs &a, const Phi &phi, const Layout<A> &lay, const float *states_m, int64_t t0,
                 int64_t t1, bool stream_out, QueryScratch<A> &scratch) {
  constexpr int L = kLanes<A>;
  const int d = lay.d, half = lay.half, heads = a.heads, words = lay.words;
  const int64_t tb = t1 - t0, feat_head = kQueryBlock * d, ob_head = kQueryBlock * lay.mp,
                sign_head = kQueryBlock * words;
  ScratchBuffer &mag = scratch.mag, &ob = scratch.ob, &den = scratch.den;
  uint64_t *signs = reinterpret_cast<uint64_t *>(scratch.signs.data);
  uint64_t *neg = reinterpret_cast<uint64_t *>(scratch.masks.data);
  int32_t *offs = reinterpret_cast<int32_t *>(scratch.offs.data);
  const bool gather = scratch.gather;
  alignas(64) int32_t lane_index[L];
  for (int i = 0; i < L; ++i) lane_index[i] = i;
  const auto lane_ids = xsimd::batch<int32_t, A>::load_aligned(lane_index);
  const Vec<A> lanes = xsimd::to_float(lane_ids), zero(0.0f);
  for (int64_t t = 0; t < tb; ++t) {
    if (t0 + t + kPrefetchTokens < a.n_q)
      prefetch_floats(a.q + (t0 + t + kPrefetchTokens) * a.ld_q, int64_t(heads) * d);
    for (int h = 0; h < heads; ++h) {
      const int64_t c0 = int64_t(h) * d;
      const float *q = a.q + (t0 + t) * a.ld_q + c0;
      const float *kmean = states_m + h * lay.qstate + 2 * d * lay.mp;
      float *mg = mag.data + h * feat_head + t * d;
      uint64_t *sg = signs + h * sign_head + t * words;
      for (int w = 0; w < words; ++w) sg[w] = 0;
      Vec<A> den_sim(0.0f), den_opp(0.0f);
      for (int j = 0; j < d; j += L) {
        const int n = std::min(L, d - j);
        const Vec<A> u = load_first<A>(q + j, n) * load_first<A>(a.inv_scale + c0 + j, n);
        const Vec<A> m = phi.apply(phi.band(c0 + j, n), u); // 0 on pad lanes
        store_first<A>(mg + j, m, n);
        // Row j of M for pos(q'), d + j for neg(q'), by u's sign bit (a -0
        // picks row d + j, but its m is 0).
        if (gather) {
          const auto row_off = gather_row_offsets<A>(u, j, d, lay.mp, lane_ids);
          int32_t *dst = offs + h * feat_head + t * d + j;
          if (n == L) {
            row_off.store_unaligned(dst);
          } else {
            alignas(64) int32_t tmp[L];
            row_off.store_aligned(tmp);
            std::copy(tmp, tmp + n, dst);
          }
        } else {
          sg[j / 64] |= sign_bits<A>(u) << (j % 64);
        }
        const auto neg_u = u < zero;
        const Vec<A> km_pos = load_first<A>(kmean + j, n), km_neg = load_first<A>(kmean + d + j, n);
        den_sim = xsimd::fma(m, xsimd::select(neg_u, km_neg, km_pos), den_sim);
        den_opp = xsimd::fma(m, xsimd::select(neg_u, km_pos, km_neg), den_opp);
      }
      den.data[(h * kQueryBlock + t) * 2] = xsimd::hadd(den_sim);
      den.data[(h * kQueryBlock + t) * 2 + 1] = xsimd::hadd(den_opp);
    }
  }
  const uint64_t valid = block_tokens(tb);
  for (int h = 0; h < heads; ++h) {
    float *o = ob.data + h * ob_head;
    if (gather) {
      gather_accumulate<A>(mag.data + h * feat_head, offs + h * feat_head, d, states_m + h * lay.qstate, tb, o,
                           lay.mp);
      continue;
    }
    for (int64_t i = 0; i < tb * lay.mp; i += L) Vec<A>(0.0f).store_aligned(o + i);
    channel_masks(signs + h * sign_head, words, tb, neg);
    query_accumulate<A>(QueryBlock{mag.data + h * feat_head, neg, valid, d, lay.mp, o},
                        states_m + h * lay.qstate);
  }
  for (int64_t t = 0; t < tb; ++t) {
    for (int h = 0; h < heads; ++h) {
      const float *o = ob.data + h * ob_head + t * lay.mp;
      const float *dn = den.data + (h * kQueryBlock + t) * 2;
      const Vec<A> f_sim(1.0f / (dn[0] + kDenominatorEps)), f_opp(1.0f / (dn[1] + kDenominatorEps));
      float *dst = a.out + (t0 + t) * a.ld_out + int64_t(h) * d;
      for (int c = 0; c < d; c += L) {
        // Vectors wholly in one half need no per-lane choice (no blend).
        const Vec<A> f = c + L <= half ? f_sim
                         : c >= half   ? f_opp
                                       : xsimd::select(lanes < Vec<A>(float(half - c)), f_sim, f_opp);
        if (stream_out)
          store_stream<A>(dst + c, Vec<A>::load_aligned(o + c) * f);
        else
          store_first<A>(dst + c, Vec<A>::load_aligned(o + c) * f, d - c);
      }
    }
  }
}

} // namespace pola::kernels::simd::pola_detail
