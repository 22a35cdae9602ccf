// The dense key and query passes of the polarity core for the exp_sigmoid
// feature map with optional RoPE (PolaFormer++, SPEC-polaformerpp 2.7), used
// by pola_rope_attention.hpp. They share the sign-split core's chunking and
// block sizes (pola_attention_common.hpp) but not its sign-pattern bands:
// those rely on each channel feeding exactly one feature row and on the
// opposite path being the same path with its halves swapped. RoPE mixes
// neighbouring features and the two query paths have their own weights, so
// both products here are dense (dense_tile.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"
#include "kernels/simd/dense_tile.hpp"
#include "kernels/simd/pola_attention_common.hpp"
#include "kernels/simd/pola_feature_map.hpp"

namespace pola::kernels::simd::pola_detail {

// Padded sizes of one head's buffers (multiples of the vector width).
template <class A> struct DenseLayout {
  int d, half;
  int64_t dp;     // padded v / KV row width (d)
  int64_t p2;     // padded 2d: a feature row, ksum, kmean
  int64_t hp;     // padded ceil(d/2): a path's M row width (the opposite path gets the odd column)
  int64_t state;  // one head's chunk state: KV (2d x dp) + ksum (p2)
  int64_t qstate; // one head's query state: M_same (2d x hp), M_opp (2d x hp), kmean (p2)
  explicit DenseLayout(int head_dim)
      : d(head_dim), half(head_dim / 2), dp(round_up_lanes<A>(head_dim)), p2(round_up_lanes<A>(2 * head_dim)),
        hp(round_up_lanes<A>(head_dim - head_dim / 2)), state(2 * head_dim * dp + p2), qstate(4 * head_dim * hp + p2) {}
};

// y (vector-aligned, room for width rounded up to the vector) = x (width
// floats, even) rotated at token tok:
//   y[2i] = x[2i] cos - x[2i+1] sin,  y[2i+1] = x[2i+1] cos + x[2i] sin;
// a copy without a table. Vectors start at even offsets, so no pair is split.
template <class A> inline void rope_rotate(const float *x, const RopeTable &rope, int64_t tok, int width, float *y) {
  constexpr int L = kLanes<A>;
  if (!rope) {
    for (int j = 0; j < width; j += L) load_first<A>(x + j, std::min(L, width - j)).store_aligned(y + j);
    return;
  }
  const float *cs = rope.cos + tok * rope.width, *sn = rope.sin + tok * rope.width;
  for (int j = 0; j < width; j += L) {
    const int n = std::min(L, width - j);
    const Vec<A> v = load_first<A>(x + j, n), c = load_first<A>(cs + j, n), s = load_first<A>(sn + j, n);
    // fmaddsub: even lanes v c - w, odd lanes v c + w, with w = swap_pairs(v) s.
#if POLA_SIMD_X86
    if constexpr (kLanes<A> == 16)
      Vec<A>(_mm512_fmaddsub_ps(v, c, Vec<A>(_mm512_permute_ps(v, 0xB1)) * s)).store_aligned(y + j);
    else
      Vec<A>(_mm256_fmaddsub_ps(v, c, Vec<A>(_mm256_permute_ps(v, 0xB1)) * s)).store_aligned(y + j);
#else
    rotate_pairs<A>(v, c, s).store_aligned(y + j);
#endif
  }
}

// Key tokens [t0, t1) of heads [h0, h1) into their chunk states (lay.state
// floats each, indexed by head):
//   ksum += psi,  KV += RoPE(psi)^T v,  psi = exp([k+, k-]) - 1.
// Per block, each token's psi is computed once (one exp per channel: the
// non-zero half is exp(|k|) - 1, the other half 0), rotated into block
// scratch, and then KV takes the block as one dense product. A head's result
// does not depend on which other heads share its group.
template <class A>
void rope_key_chunk(const PolarityAttnArgs &a, const ExpSigmoidFeature<A> &phi, const DenseLayout<A> &lay,
                    int64_t t0, int64_t t1, int h0, int h1, float *states) {
  constexpr int L = kLanes<A>;
  const int d = lay.d, group = h1 - h0;
  const int64_t psi_head = kKeyBlock * lay.p2, v_head = kKeyBlock * lay.dp;
  ScratchBuffer psi(group * psi_head), vb(group * v_head), raw(lay.p2);
  for (int64_t b0 = t0; b0 < t1; b0 += kKeyBlock) {
    const int64_t tb = std::min(kKeyBlock, t1 - b0);
    for (int64_t t = 0; t < tb; ++t) {
      const int64_t tok = b0 + t;
      if (tok + kPrefetchTokens < t1) {
        const int64_t ahead = tok + kPrefetchTokens, c0 = int64_t(h0) * d, n = int64_t(group) * d;
        prefetch_floats(a.k + ahead * a.ld_k + c0, n);
        prefetch_floats(a.v + ahead * a.ld_v + c0, n);
      }
      for (int g = 0; g < group; ++g) {
        const int64_t c0 = int64_t(h0 + g) * d;
        const float *kr = a.k + tok * a.ld_k + c0;
        const float *vr = a.v + tok * a.ld_v + c0;
        float *ksum = states + (h0 + g) * lay.state + 2 * d * lay.dp;
        for (int j = 0; j < d; j += L) {
          const int n = std::min(L, d - j);
          const Vec<A> u = load_first<A>(kr + j, n);
          const Vec<A> e = phi.exp_minus_one(xsimd::abs(u));
          const Vec<A> pos = pos_part<A>(u, e), neg = neg_part<A>(u, e);
          store_first<A>(raw.data + j, pos, n);
          store_first<A>(raw.data + d + j, neg, n);
          // ksum takes the un-rotated features (the denominator's kernel).
          store_first<A>(ksum + j, load_first<A>(ksum + j, n) + pos, n);
          store_first<A>(ksum + d + j, load_first<A>(ksum + d + j, n) + neg, n);
          // v row into the padded block (pads were zeroed once and are never written).
          store_first<A>(vb.data + g * v_head + t * lay.dp + j, load_first<A>(vr + j, n), n);
        }
        rope_rotate<A>(raw.data, a.rope, tok, 2 * d, psi.data + g * psi_head + t * lay.p2);
      }
    }
    for (int g = 0; g < group; ++g) {
      float *kv = states + (h0 + g) * lay.state;
      const float *ps = psi.data + g * psi_head, *vs = vb.data + g * v_head;
      // KV rows are features (psi's columns: stride 1), the sum runs over tokens.
      for_each_dense_tile<A>(2 * d, int(lay.dp / L), [&](auto r, auto w, int64_t r0, int64_t col) {
        constexpr int R = decltype(r)::value, V = decltype(w)::value;
        Vec<A> acc[R][V];
        for (int i = 0; i < R; ++i)
          for (int v = 0; v < V; ++v) acc[i][v] = Vec<A>::load_aligned(kv + (r0 + i) * lay.dp + col + v * L);
        dense_tile<A, R, V>(ps + r0, 1, lay.p2, vs + col, lay.dp, tb, acc);
        for (int i = 0; i < R; ++i)
          for (int v = 0; v < V; ++v) acc[i][v].store_aligned(kv + (r0 + i) * lay.dp + col + v * L);
      });
    }
  }
}

// One head's query state from its summed chunk state, scaled by 1/n:
// M_same = KV[:, 0:d/2] / n, M_opp = KV[:, d/2:d] / n (rows padded to hp with
// zeros), kmean = ksum / n.
template <class A> void build_rope_query_state(const DenseLayout<A> &lay, const float *kv, float inv_n, float *m) {
  const int d = lay.d, half = lay.half;
  const float *ksum = kv + 2 * d * lay.dp;
  float *m_same = m, *m_opp = m + 2 * d * lay.hp, *kmean = m + 4 * d * lay.hp;
  for (int r = 0; r < 2 * d; ++r) {
    const float *row = kv + r * lay.dp;
    for (int64_t c = 0; c < lay.hp; ++c) {
      m_same[r * lay.hp + c] = c < half ? row[c] * inv_n : 0.0f;
      m_opp[r * lay.hp + c] = c < d - half ? row[half + c] * inv_n : 0.0f;
    }
    kmean[r] = ksum[r] * inv_n;
  }
}

// Per-thread scratch of rope_query_block, allocated once per call and thread:
// each head's rotated features of a block, per path (tokens x p2), the two
// un-rotated feature rows of the token at hand, and per token and head the
// two reciprocal denominators.
template <class A> struct RopeQueryScratch {
  ScratchBuffer same, opp, raw, inv;
  RopeQueryScratch(const DenseLayout<A> &lay, int heads)
      : same(heads * kQueryBlock * lay.p2), opp(heads * kQueryBlock * lay.p2), raw(2 * lay.p2),
        inv(heads * kQueryBlock * 2) {}
};

// Query tokens [t0, t1) of every head. Per token and head:
//   phi_s = exp([q+, q-] sigma_same) - 1,  phi_o = exp([q-, q+] sigma_opp) - 1,
//   z_p = phi_p . kmean (un-rotated), then out_p = (RoPE(phi_p) @ M_p) / (z_p + 1e-6)
// into channels [0, d/2) (same) and [d/2, d) (opp) of the head. For channel j
// only one of q+_j, q-_j is non-zero, so each path needs one exp per channel:
// of |q_j| times the weight of the half it lands in.
template <class A>
void rope_query_block(const PolarityAttnArgs &a, const ExpSigmoidFeature<A> &phi, const DenseLayout<A> &lay,
                      const float *states_m, int64_t t0, int64_t t1, RopeQueryScratch<A> &scratch) {
  constexpr int L = kLanes<A>;
  const int d = lay.d, half = lay.half, heads = a.heads;
  const int64_t tb = t1 - t0, feat_head = kQueryBlock * lay.p2;
  float *raw_s = scratch.raw.data, *raw_o = scratch.raw.data + lay.p2, *inv = scratch.inv.data;
  for (int64_t t = 0; t < tb; ++t) {
    const int64_t tok = t0 + t;
    if (tok + kPrefetchTokens < a.n_q) prefetch_floats(a.q + (tok + kPrefetchTokens) * a.ld_q, int64_t(heads) * d);
    for (int h = 0; h < heads; ++h) {
      const int64_t c0 = int64_t(h) * d;
      const float *q = a.q + tok * a.ld_q + c0;
      const float *ws = phi.sigma_same + 2 * c0, *wo = phi.sigma_opp + 2 * c0;
      const float *kmean = states_m + h * lay.qstate + 4 * d * lay.hp;
      Vec<A> z_s(0.0f), z_o(0.0f);
      for (int j = 0; j < d; j += L) {
        const int n = std::min(L, d - j);
        const Vec<A> u = load_first<A>(q + j, n), mag = xsimd::abs(u);
        // The weight of the half the channel feeds (a 0 gives 0 features either way).
        const auto negative = u < Vec<A>(0.0f);
        const Vec<A> e_s = phi.exp_minus_one(
            mag * xsimd::select(negative, load_first<A>(ws + d + j, n), load_first<A>(ws + j, n)));
        const Vec<A> e_o = phi.exp_minus_one(
            mag * xsimd::select(negative, load_first<A>(wo + j, n), load_first<A>(wo + d + j, n)));
        const Vec<A> s_lo = pos_part<A>(u, e_s), s_hi = neg_part<A>(u, e_s); // [q+, q-]
        const Vec<A> o_lo = neg_part<A>(u, e_o), o_hi = pos_part<A>(u, e_o); // [q-, q+]
        store_first<A>(raw_s + j, s_lo, n);
        store_first<A>(raw_s + d + j, s_hi, n);
        store_first<A>(raw_o + j, o_lo, n);
        store_first<A>(raw_o + d + j, o_hi, n);
        const Vec<A> km_lo = load_first<A>(kmean + j, n), km_hi = load_first<A>(kmean + d + j, n);
        z_s = xsimd::fma(s_lo, km_lo, xsimd::fma(s_hi, km_hi, z_s));
        z_o = xsimd::fma(o_lo, km_lo, xsimd::fma(o_hi, km_hi, z_o));
      }
      // The reciprocal first, then the products (SPEC-polaformerpp T2).
      inv[(h * kQueryBlock + t) * 2] = 1.0f / (lane_sum<A>(z_s) + kDenominatorEps);
      inv[(h * kQueryBlock + t) * 2 + 1] = 1.0f / (lane_sum<A>(z_o) + kDenominatorEps);
      rope_rotate<A>(raw_s, a.rope, tok, 2 * d, scratch.same.data + h * feat_head + t * lay.p2);
      rope_rotate<A>(raw_o, a.rope, tok, 2 * d, scratch.opp.data + h * feat_head + t * lay.p2);
    }
  }
  for (int h = 0; h < heads; ++h) {
    const float *m = states_m + h * lay.qstate;
    for (int path = 0; path < 2; ++path) {
      const float *f = (path == 0 ? scratch.same.data : scratch.opp.data) + h * feat_head;
      const float *mp = m + path * 2 * d * lay.hp;
      const int cols = path == 0 ? half : d - half; // this path's output channels
      float *dst0 = a.out + t0 * a.ld_out + int64_t(h) * d + path * half;
      // Output rows are tokens (f's rows: stride p2), the sum runs over the 2d features.
      for_each_dense_tile<A>(tb, int(lay.hp / L), [&](auto r, auto w, int64_t r0, int64_t col) {
        constexpr int R = decltype(r)::value, V = decltype(w)::value;
        Vec<A> acc[R][V];
        for (int i = 0; i < R; ++i)
          for (int v = 0; v < V; ++v) acc[i][v] = Vec<A>(0.0f);
        dense_tile<A, R, V>(f + r0 * lay.p2, lay.p2, 1, mp + col, lay.hp, 2 * d, acc);
        for (int i = 0; i < R; ++i) {
          const Vec<A> scale(inv[(h * kQueryBlock + r0 + i) * 2 + path]);
          float *dst = dst0 + (r0 + i) * a.ld_out + col;
          for (int v = 0; v < V; ++v) {
            const int64_t left = cols - (col + v * L);
            if (left > 0) store_first<A>(dst + v * L, acc[i][v] * scale, int(std::min<int64_t>(L, left)));
          }
        }
      });
    }
  }
}

} // namespace pola::kernels::simd::pola_detail
