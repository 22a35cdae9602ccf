// Key pass of the polarity attention core (pola_attention.hpp): per chunk of
// key tokens, KV = phi_k^T [v1 | v2] and ksum, by sign-pattern bands.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/attention_args.h"
#include "kernels/scratch.h"
#include "kernels/simd/pola_attention_common.hpp"

namespace pola::kernels::simd::pola_detail {

// One key block of one head, as the sign-sorted GEMM reads it: per token the
// magnitudes f(|k'|) of the feature map (stride dp, pads zero) and the v row
// (stride dp, pads zero); per channel a token mask (bit t set: k'_t < 0 for
// that channel).
struct KeyBlock {
  const float *mag, *v;
  const uint64_t *neg; // d masks
  uint64_t valid;      // bits of the block's tokens
  int64_t dp;
};

// acc[i][sign][v] += mag[t, c0 + i] * v[t, col + v*L] for the tokens of
// sign pattern P over the band (bit i of P set: channel c0 + i negative).
// Each token updates only the rows of its signs, so the FMAs are d per token
// and column instead of the 2d a dense phi^T v would spend.
template <class A, int C, int V, int P>
inline void band_pattern(const KeyBlock &kb, int c0, int64_t col, Vec<A> (&acc)[C][2][V]) {
  constexpr int L = kLanes<A>;
  for (uint64_t tokens = pattern_tokens<C, P>(kb.valid, kb.neg + c0); tokens; tokens &= tokens - 1) {
    const int64_t off = int64_t(__builtin_ctzll(tokens)) * kb.dp;
    const float *mg = kb.mag + off + c0;
    const float *vr = kb.v + off + col;
    Vec<A> vv[V];
    for (int v = 0; v < V; ++v) vv[v] = Vec<A>::load_aligned(vr + v * L);
    for (int i = 0; i < C; ++i) {
      const Vec<A> b(mg[i]);
      for (int v = 0; v < V; ++v) acc[i][(P >> i) & 1][v] = xsimd::fma(b, vv[v], acc[i][(P >> i) & 1][v]);
    }
  }
}

template <class A, int C, int V, int... P>
inline void band_patterns(const KeyBlock &kb, int c0, int64_t col, Vec<A> (&acc)[C][2][V],
                          std::integer_sequence<int, P...>) {
  (band_pattern<A, C, V, P>(kb, c0, col, acc), ...);
}

// KV rows c0..c0+C-1 (pos) and d+c0.. (neg), columns [col, col + V*L).
template <class A, int C, int V>
inline void band_tile(const KeyBlock &kb, int c0, int d, int64_t col, float *kv) {
  constexpr int L = kLanes<A>;
  Vec<A> acc[C][2][V];
  for (int i = 0; i < C; ++i)
    for (int s = 0; s < 2; ++s)
      for (int v = 0; v < V; ++v)
        acc[i][s][v] = Vec<A>::load_aligned(kv + (c0 + i + s * d) * kb.dp + col + v * L);
  band_patterns<A, C, V>(kb, c0, col, acc, std::make_integer_sequence<int, (1 << C)>{});
  for (int i = 0; i < C; ++i)
    for (int s = 0; s < 2; ++s)
      for (int v = 0; v < V; ++v) acc[i][s][v].store_aligned(kv + (c0 + i + s * d) * kb.dp + col + v * L);
}

// KV (2d x dp) += phi^T v over one block, phi never materialised.
template <class A>
inline void kv_accumulate(const KeyBlock &kb, int d, float *kv) {
  for_each_band_tile<A>(d, int(kb.dp / kLanes<A>), [&](auto c, auto v, int c0, int64_t col) {
    band_tile<A, decltype(c)::value, decltype(v)::value>(kb, c0, d, col, kv);
  });
}

// Accumulates key tokens [t0, t1) of heads [h0, h1) into their states
// (indexed by head, lay.state floats each). Each block first streams its k / v
// rows once (the heads of the group, in memory order, prefetched
// kPrefetchTokens ahead) into per-head magnitude, sign and value scratch that
// stays in L1/L2; then each head's sign-sorted GEMM runs. A head's result
// does not depend on which other heads share its group.
template <class A, class Phi>
void key_chunk(const PolarityAttnArgs &a, const Phi &phi, const Layout<A> &lay, int64_t t0, int64_t t1, int h0,
               int h1, float *states) {
  constexpr int L = kLanes<A>;
  const int d = lay.d, group = h1 - h0, words = lay.words;
  const int64_t width = int64_t(a.heads) * d;
  const int64_t blk_head = kKeyBlock * lay.dp, sign_head = kKeyBlock * words;
  ScratchBuffer mag(group * blk_head), vb(group * blk_head), sign_buf(2 * group * sign_head),
      mask_buf(2 * 64 * words);
  uint64_t *signs = reinterpret_cast<uint64_t *>(sign_buf.data);
  uint64_t *neg_masks = reinterpret_cast<uint64_t *>(mask_buf.data);
  for (int64_t b0 = t0; b0 < t1; b0 += kKeyBlock) {
    const int64_t tb = std::min(kKeyBlock, t1 - b0);
    for (int64_t t = 0; t < tb; ++t) {
      const int64_t tok = b0 + t;
      if (tok + kPrefetchTokens < t1) {
        const int64_t ahead = tok + kPrefetchTokens, c0 = int64_t(h0) * d, n = int64_t(group) * d;
        prefetch_floats(a.k + ahead * a.ld_k + c0, n);
        prefetch_floats(a.v + ahead * a.ld_v + c0, n);
        if (a.pos_enc) prefetch_floats(a.pos_enc + ahead * width + c0, n);
      }
      for (int g = 0; g < group; ++g) {
        const int64_t c0 = int64_t(h0 + g) * d;
        const float *kr = a.k + tok * a.ld_k + c0;
        const float *pr = a.pos_enc ? a.pos_enc + tok * width + c0 : nullptr;
        const float *vr = a.v + tok * a.ld_v + c0;
        float *mg = mag.data + g * blk_head + t * lay.dp;
        float *vd = vb.data + g * blk_head + t * lay.dp;
        uint64_t *sg = signs + g * sign_head + t * words;
        float *ksum = states + (h0 + g) * lay.state + 2 * d * lay.dp;
        for (int w = 0; w < words; ++w) sg[w] = 0;
        for (int j = 0; j < d; j += L) {
          const int n = std::min(L, d - j);
          Vec<A> u = load_first<A>(kr + j, n);
          if (pr) u += load_first<A>(pr + j, n);
          u *= load_first<A>(a.inv_scale + c0 + j, n);
          const Vec<A> m = phi.apply(phi.band(c0 + j, n), u); // 0 on pad lanes
          m.store_aligned(mg + j);
          sg[j / 64] |= sign_bits<A>(u) << (j % 64);
          // ksum: pos part at [0, d), neg part at [d, 2d). A -0 or a pad lane has m = 0.
          store_first<A>(ksum + j, load_first<A>(ksum + j, n) + pos_part<A>(u, m), n);
          store_first<A>(ksum + d + j, load_first<A>(ksum + d + j, n) + neg_part<A>(u, m), n);
          // v row into the padded block (pads were zeroed once and are never written).
          store_first<A>(vd + j, load_first<A>(vr + j, n), n);
        }
      }
    }
    const uint64_t valid = block_tokens(tb);
    for (int g = 0; g < group; ++g) {
      channel_masks(signs + g * sign_head, words, tb, neg_masks);
      kv_accumulate<A>(KeyBlock{mag.data + g * blk_head, vb.data + g * blk_head, neg_masks, valid, lay.dp},
                       d, states + (h0 + g) * lay.state);
    }
  }
}

} // namespace pola::kernels::simd::pola_detail
