// Polarity-aware linear attention core (SPEC section 3, steps 2-7), one
// template for every ISA. Linear in tokens; nothing n_q x n_k ever exists.
//
// Key side, one pass over k and v. Tokens are cut into chunks whose number
// depends only on n_k (never on the thread count); each chunk accumulates, per
// head, the unnormalised state
//     KV   = sum_t phi_k[t]^T v[t]   (2d x d; columns [v1 | v2])
//     ksum = sum_t phi_k[t]          (2d)
// with phi_k = [relu(k')^p, relu(-k')^p], k' = (k + pos_enc) * inv_scale.
// Inside a chunk, blocks of kKeyBlock tokens are folded into register tiles
// of KV, so the state stays in L1/L2. Chunk partials are then summed in chunk
// order: the output is bit-identical for any thread count.
//
// The key GEMM skips phi_k's zeros. For channel j a token feeds KV row j
// (k'_j > 0) or row d + j (k'_j < 0), never both. A register tile covers a
// band of C channels (both sign rows of each) and V column vectors; the
// block's tokens are picked by their sign pattern over the band (a mask per
// channel, one bit per token), and each pattern runs with its rows fixed at
// compile time. So a token costs d
// row-FMAs instead of the 2d of a dense phi^T v. (Scattering each non-zero
// into its KV row in L1 also halves the FMAs, but is bound by vector stores.)
//
// The reference divides by n as (phi^T n^-1/2)(v n^-1/2) and kmean = ksum/n;
// both are KV/n and ksum/n, applied once when the query state is built.
//
// Query side, one pass over q. q_opp is q_sim with its halves swapped, and
// q_opp @ X == q_sim @ swap_rows(X), so the (2d) x (d+2) state per head
//     [KV1 | swap_rows(KV2) | kmean | swap(kmean)] / n
// gives every output of a token from out = q_sim @ state:
//     x_sim = out[:d/2] / (out[d] + 1e-6),  x_opp = out[d/2:d] / (out[d+1] + 1e-6).
// For each channel j exactly one of pos(q'_j), neg(q'_j) is non-zero, so
// out = sum_j |q'_j|^p_j * state[j + d * (q'_j < 0)]: d row-FMAs instead of 2d.
// The same sign-pattern bands as on the key side do this: a band's 2C rows of
// M sit in registers and each token of a pattern adds its C products to its
// output row (in L1). The two kmean columns are done as vector dot products
// while the features are computed, so the FMA part works on M = the first d
// columns only (d padded to the vector width instead of d + 2: 4 AVX-512
// vectors, not 5, at d = 64). Narrow heads (M rows of at most 32 floats)
// gather instead: pola_query_gather.hpp.
//
// A large output is written with non-temporal stores (see kPolaStreamOutBytes).
//
// Extra memory, independent of N: min(32, ceil(n_k / 256)) chunk partials of
// heads x (2d x d_pad + 2d) floats (8.5 MB at 8 heads, d = 64), the query
// state heads x (2d x d_pad + 2d), and per-thread block scratch (~0.5 MB).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/bit_transpose.h"
#include "kernels/kernels.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"
#include "kernels/simd/pola_query_gather.hpp"

namespace pola::kernels::simd {

namespace pola_detail {

constexpr int64_t kKeyBlock = 64;      // key tokens per register-tile pass: one bit each in a uint64
constexpr int64_t kChunkMinTokens = 256;   // fewer tokens per chunk: several tasks even at N = 784
constexpr int64_t kMaxChunks = 32;     // bounds the partial-state memory
constexpr int64_t kQueryBlock = 64;    // query tokens per scratch block: one bit each in a uint64
constexpr float kDenominatorEps = 1e-6f;
static_assert(kKeyBlock <= 64 && kQueryBlock <= 64, "a block's tokens are the bits of one uint64 mask");

// Register tile shapes per ISA: accumulators + operands fit the register file.
template <class A> struct Tiles {
  // Sign-pattern bands (both passes): C channels x 2 signs x V vectors held
  // in registers (key side: KV accumulators; query side: rows of M), plus V
  // operand vectors and C broadcasts.
  // AVX2: 3 x 2 x 2 accumulators + 2 operands + a broadcast = 15 of 16
  // registers (measured ~10% faster than 2 channels x 2 vectors).
  static constexpr int band_channels = 3;
  static constexpr int band_vecs = kRegisters<A> == 32 ? 4 : 2;
};

// Padded sizes of one head's buffers (all multiples of the vector width).
template <class A> struct Layout {
  int d, half;
  int64_t dp;      // padded v / KV row width
  int64_t p2;      // padded 2d: ksum / kmean width
  int64_t mp;      // padded M row width (d)
  int64_t state;   // floats of one head's chunk state: KV (2d x dp) + ksum (p2)
  int64_t qstate;  // floats of one head's query state: M (2d x mp) + kmean (p2)
  explicit Layout(int head_dim)
      : d(head_dim), half(head_dim / 2), dp(round_up_lanes<A>(head_dim)),
        p2(round_up_lanes<A>(2 * head_dim)), mp(dp), state(2 * head_dim * dp + p2),
        qstate(2 * head_dim * mp + p2) {}
};

// Sign bits of a vector: bit i set when lane i of u has its sign bit set.
template <class A> inline uint64_t sign_bits(const Vec<A> &u) {
  if constexpr (kLanes<A> == 16)
    return uint64_t(_mm512_cmplt_epi32_mask(_mm512_castps_si512(u), _mm512_setzero_si512()));
  else
    return uint64_t(uint32_t(_mm256_movemask_ps(u)));
}

// The block's tokens (bits of `valid`, ascending) whose signs over channels
// neg[0..C) form pattern P (bit i of P set: channel i negative).
template <int C, int P> inline uint64_t pattern_tokens(uint64_t valid, const uint64_t *neg) {
  for (int i = 0; i < C; ++i) valid &= (P >> i) & 1 ? neg[i] : ~neg[i];
  return valid;
}

// One key block of one head, as the sign-sorted GEMM reads it: per token the
// magnitudes |k'|^p (stride dp, pads zero) and the v row (stride dp, pads
// zero); per channel a token mask (bit t set: k'_t < 0 for that channel).
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

// KV rows of channels [c0, c0 + C) += the block's tokens, by sign pattern.
template <class A, int C> inline void key_band(const KeyBlock &kb, int c0, int d, float *kv) {
  constexpr int V = Tiles<A>::band_vecs, L = kLanes<A>;
  const int nvec = int(kb.dp / L);
  int v0 = 0;
  for (; v0 + V <= nvec; v0 += V) band_tile<A, C, V>(kb, c0, d, int64_t(v0) * L, kv);
  with_width<V - 1>(nvec - v0, [&](auto w) {
    band_tile<A, C, decltype(w)::value>(kb, c0, d, int64_t(v0) * L, kv);
  });
}

// KV (2d x dp) += phi^T v over one block, phi never materialised.
template <class A>
inline void kv_accumulate(const KeyBlock &kb, int d, float *kv) {
  constexpr int C = Tiles<A>::band_channels;
  int c = 0;
  for (; c + C <= d; c += C) key_band<A, C>(kb, c, d, kv);
  for (; c < d; ++c) key_band<A, 1>(kb, c, d, kv);
}

// Per-channel token masks of a block from its per-token sign words
// (`words` per token, tb tokens): neg[c] bit t = bit c of token t.
inline void channel_masks(const uint64_t *token_signs, int words, int64_t tb, uint64_t *neg) {
  for (int w = 0; w < words; ++w) {
    uint64_t rows[64];
    for (int64_t t = 0; t < 64; ++t) rows[t] = t < tb ? token_signs[t * words + w] : 0;
    transpose_bits64(rows);
    for (int c = 0; c < 64; ++c) neg[w * 64 + c] = rows[c];
  }
}

// Accumulates key tokens [t0, t1) of heads [h0, h1) into their states
// (indexed by head, lay.state floats each). Each block first streams its k / v
// rows once (the heads of the group, in memory order, which the hardware
// prefetcher follows) into per-head magnitude, sign and value scratch that
// stays in L1/L2; then each head's sign-sorted GEMM runs. A head's result
// does not depend on which other heads share its group.
template <class A>
void key_chunk(const PolaAttnArgs &a, const Layout<A> &lay, int64_t t0, int64_t t1, int h0, int h1,
               float *states) {
  constexpr int L = kLanes<A>;
  const int d = lay.d, group = h1 - h0, words = (d + 63) / 64;
  const int64_t width = int64_t(a.heads) * d;
  const int64_t blk_head = kKeyBlock * lay.dp, sign_head = kKeyBlock * words;
  ScratchBuffer mag(group * blk_head), vb(group * blk_head), sign_buf(2 * group * sign_head),
      mask_buf(2 * 64 * words);
  uint64_t *signs = reinterpret_cast<uint64_t *>(sign_buf.data);
  uint64_t *neg_masks = reinterpret_cast<uint64_t *>(mask_buf.data);
  const Vec<A> zero(0.0f);
  for (int64_t b0 = t0; b0 < t1; b0 += kKeyBlock) {
    const int64_t tb = std::min(kKeyBlock, t1 - b0);
    for (int64_t t = 0; t < tb; ++t) {
      const int64_t tok = b0 + t;
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
          const Vec<A> m = abs_pow<A>(u, load_first<A>(a.power + c0 + j, n)); // 0 on pad lanes
          m.store_aligned(mg + j);
          sg[j / 64] |= sign_bits<A>(u) << (j % 64);
          // ksum: pos part at [0, d), neg part at [d, 2d). A -0 or a pad lane has m = 0.
          const auto neg = u < zero;
          store_first<A>(ksum + j, load_first<A>(ksum + j, n) + xsimd::select(neg, zero, m), n);
          store_first<A>(ksum + d + j, load_first<A>(ksum + d + j, n) + xsimd::select(neg, m, zero), n);
          // v row into the padded block (pads were zeroed once and are never written).
          store_first<A>(vd + j, load_first<A>(vr + j, n), n);
        }
      }
    }
    const uint64_t valid = tb == 64 ? ~uint64_t(0) : (uint64_t(1) << tb) - 1;
    for (int g = 0; g < group; ++g) {
      channel_masks(signs + g * sign_head, words, tb, neg_masks);
      kv_accumulate<A>(KeyBlock{mag.data + g * blk_head, vb.data + g * blk_head, neg_masks, valid, lay.dp},
                       d, states + (h0 + g) * lay.state);
    }
  }
}

// Builds one head's query state from its summed key state, scaled by 1/n:
// M (2d x mp) = [KV1 | swap_rows(KV2)] / n, then kmean (2d) = ksum / n.
template <class A>
void build_query_state(const Layout<A> &lay, const float *kv, float inv_n, float *m) {
  const int d = lay.d, half = lay.half;
  const float *ksum = kv + 2 * d * lay.dp;
  float *kmean = m + 2 * d * lay.mp;
  for (int r = 0; r < 2 * d; ++r) {
    const int sw = (r + d) % (2 * d); // the row q_opp pairs with
    float *row = m + r * lay.mp;
    for (int c = 0; c < half; ++c) row[c] = kv[r * lay.dp + c] * inv_n;
    for (int c = half; c < d; ++c) row[c] = kv[sw * lay.dp + c] * inv_n;
    for (int64_t c = d; c < lay.mp; ++c) row[c] = 0.0f;
    kmean[r] = ksum[r] * inv_n;
  }
}

// One query block of one head, as the sign-sorted product reads it: per
// token the magnitudes |q'|^p (stride d); per channel a token mask (bit t
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
  for (uint64_t tokens = pattern_tokens<C, P>(qb.valid, qb.neg + c0); tokens; tokens &= tokens - 1) {
    const int64_t t = __builtin_ctzll(tokens);
    const float *mg = qb.mag + t * qb.d + c0;
    float *o = qb.out + t * qb.mp + col;
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

template <class A, int C> inline void query_band(const QueryBlock &qb, const float *m, int c0) {
  constexpr int V = Tiles<A>::band_vecs, L = kLanes<A>;
  const int nvec = int(qb.mp / L);
  int v0 = 0;
  for (; v0 + V <= nvec; v0 += V) query_band_tile<A, C, V>(qb, m, c0, int64_t(v0) * L);
  with_width<V - 1>(nvec - v0, [&](auto w) {
    query_band_tile<A, C, decltype(w)::value>(qb, m, c0, int64_t(v0) * L);
  });
}

// out (tokens x mp, zeroed) += q_sim @ M over one block of one head.
template <class A>
inline void query_accumulate(const QueryBlock &qb, const float *m) {
  constexpr int C = Tiles<A>::band_channels;
  int c = 0;
  for (; c + C <= qb.d; c += C) query_band<A, C>(qb, m, c);
  for (; c < qb.d; ++c) query_band<A, 1>(qb, m, c);
}

// Query tokens [t0, t1) of every head: features, q_sim @ M, normalisation.
// q rows are read whole (all heads) and out rows written whole, in memory
// order. The denominators q_sim . kmean and q_opp . kmean come with the
// features: for channel j, q_sim selects kmean[j] (pos) or kmean[d + j] (neg)
// and q_opp the other one.
// Per-thread scratch of query_block, allocated once per call and thread.
template <class A> struct QueryScratch {
  int words;
  bool gather; // narrow heads: pola_query_gather.hpp
  ScratchBuffer mag, signs, masks, offs, ob, den;
  QueryScratch(const Layout<A> &lay, int heads)
      : words((lay.d + 63) / 64), gather(gather_fits(lay.mp)), mag(heads * kQueryBlock * lay.d),
        signs(2 * heads * kQueryBlock * words), masks(2 * 64 * words),
        offs(gather ? heads * kQueryBlock * lay.d : 0), ob(heads * kQueryBlock * lay.mp),
        den(heads * kQueryBlock * 2) {}
};

template <class A>
void query_block(const PolaAttnArgs &a, const Layout<A> &lay, const float *states_m, int64_t t0,
                 int64_t t1, bool stream_out, QueryScratch<A> &scratch) {
  constexpr int L = kLanes<A>;
  const int d = lay.d, half = lay.half, heads = a.heads, words = scratch.words;
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
        const Vec<A> m = abs_pow<A>(u, load_first<A>(a.power + c0 + j, n)); // 0 on pad lanes
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
  const uint64_t valid = tb == 64 ? ~uint64_t(0) : (uint64_t(1) << tb) - 1;
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
        const Vec<A> f = xsimd::select(lanes < Vec<A>(float(half - c)), f_sim, f_opp);
        if (stream_out)
          store_stream<A>(dst + c, Vec<A>::load_aligned(o + c) * f);
        else
          store_first<A>(dst + c, Vec<A>::load_aligned(o + c) * f, d - c);
      }
    }
  }
}

} // namespace pola_detail

template <class A> void pola_attention(const PolaAttnArgs &a) {
  using namespace pola_detail;
  if (a.n_q <= 0 || a.heads <= 0 || a.head_dim <= 0) return;
  const Layout<A> lay(a.head_dim);
  const int threads = std::max(1, a.threads);

  // Key side: the chunk count depends only on n_k, so sums are
  // thread-independent. Tasks are (chunk, group of heads); with few chunks the
  // heads are split too, so short sequences still use every thread.
  const int64_t chunks =
      a.n_k > 0 ? std::min(kMaxChunks, (a.n_k + kChunkMinTokens - 1) / kChunkMinTokens) : 1;
  const int64_t per_chunk = int64_t(a.heads) * lay.state;
  const int64_t groups = std::min<int64_t>(a.heads, (4 * threads + chunks - 1) / chunks);
  const int64_t tasks = chunks * groups;
  ScratchBuffer states(chunks * per_chunk);
#pragma omp parallel for num_threads(threads) if (threads > 1 && tasks > 1) schedule(dynamic, 1)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t c = task / groups, g = task % groups;
    key_chunk<A>(a, lay, a.n_k * c / chunks, a.n_k * (c + 1) / chunks, int(a.heads * g / groups),
                 int(a.heads * (g + 1) / groups), states.data + c * per_chunk);
  }

  // Fold chunk partials in chunk order, then build each head's query state.
  ScratchBuffer m(int64_t(a.heads) * lay.qstate);
  const float inv_n = a.n_k > 0 ? 1.0f / float(a.n_k) : 0.0f;
#pragma omp parallel for num_threads(threads) if (threads > 1 && a.heads > 1) schedule(static, 1)
  for (int h = 0; h < a.heads; ++h) {
    float *acc = states.data + h * lay.state;
    for (int64_t c = 1; c < chunks; ++c) {
      const float *part = states.data + c * per_chunk + h * lay.state;
      for (int64_t i = 0; i < lay.state; i += kLanes<A>)
        (Vec<A>::load_aligned(acc + i) + Vec<A>::load_aligned(part + i)).store_aligned(acc + i);
    }
    build_query_state<A>(lay, acc, inv_n, m.data + h * lay.qstate);
  }

  // Query side: independent token blocks.
  const int64_t blocks = (a.n_q + kQueryBlock - 1) / kQueryBlock;
  // A large output bypasses the caches: it is written once and read by no one
  // soon, and a normal store would first read every line from DRAM.
  const bool stream_out = a.head_dim % kLanes<A> == 0 && a.ld_out % kLanes<A> == 0 &&
                          reinterpret_cast<uintptr_t>(a.out) % (kLanes<A> * sizeof(float)) == 0 &&
                          double(a.n_q) * double(a.ld_out) * sizeof(float) >= kPolaStreamOutBytes;
#pragma omp parallel num_threads(threads) if (threads > 1 && blocks > 1)
  {
    QueryScratch<A> scratch(lay, a.heads);
#pragma omp for schedule(dynamic, 4) nowait
    for (int64_t b = 0; b < blocks; ++b)
      query_block<A>(a, lay, m.data, b * kQueryBlock, std::min(a.n_q, (b + 1) * kQueryBlock), stream_out,
                     scratch);
    if (stream_out) store_fence(); // before the region's closing barrier publishes out
  }
}

} // namespace pola::kernels::simd
