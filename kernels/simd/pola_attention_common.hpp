// Shared pieces of the polarity attention passes (pola_attention.hpp):
// block sizes, register tile shapes, padded layouts, and the sign masks
// that the sign-pattern bands of both passes select tokens with.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/attention_args.h"
#include "kernels/bit_transpose.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"

namespace pola::kernels::simd::pola_detail {

constexpr int64_t kKeyBlock = 64;      // key tokens per register-tile pass: one bit each in a uint64
constexpr int64_t kChunkMinTokens = 256;   // fewer tokens per chunk: several tasks even at N = 784
constexpr int64_t kMaxChunks = 32;     // bounds the partial-state memory
constexpr int64_t kQueryBlock = 64;    // query tokens per scratch block: one bit each in a uint64
constexpr float kDenominatorEps = 1e-6f;
static_assert(kKeyBlock <= 64 && kQueryBlock <= 64, "a block's tokens are the bits of one uint64 mask");

// How both cores (pola_attention.hpp, pola_attention_bf16.hpp) cut the key
// side into tasks. The chunk count depends only on n_k, so the chunk partials
// and their in-order sum are the same for any thread count; tasks are
// (chunk, group of heads), and with few chunks the heads are split too, so
// short sequences still use every thread.
struct KeySplit {
  int64_t chunks, groups, tasks;
  KeySplit(int64_t n_k, int heads, int threads)
      : chunks(n_k > 0 ? std::min(kMaxChunks, (n_k + kChunkMinTokens - 1) / kChunkMinTokens) : 1),
        groups(std::min<int64_t>(heads, (4 * int64_t(threads) + chunks - 1) / chunks)), tasks(chunks * groups) {}
  // Task `task`'s tokens [t0, t1) and heads [h0, h1).
  int64_t chunk(int64_t task) const { return task / groups; }
  int64_t t0(int64_t n_k, int64_t task) const { return n_k * chunk(task) / chunks; }
  int64_t t1(int64_t n_k, int64_t task) const { return n_k * (chunk(task) + 1) / chunks; }
  int h0(int heads, int64_t task) const { return int(heads * (task % groups) / groups); }
  int h1(int heads, int64_t task) const { return int(heads * (task % groups + 1) / groups); }
};

// Register tile shapes, chosen from the register count: sign-pattern bands
// (both passes) of C channels x V column vectors. A band holds C x 2 signs x V
// vectors (key side: KV accumulators; query side: rows of M), but one sign
// pattern's token loop uses only C x V of them, plus V operands and a
// broadcast: that live set must fit the register file. Within it, V = 4 (all
// of d = 64 in one AVX-512 tile, two AVX2 tiles) beats more channels: each
// column tile repeats every pattern loop, and a pattern loop's exit is a
// branch the predictor cannot learn (random signs), as are the loads of the
// band's vectors per pattern. So:
//   32 registers (AVX-512): C = 3, V = 4: 12 + 4 + 1 = 17 live;
//   16 registers (AVX2):    C = 2, V = 4:  8 + 4 + 1 = 13 live.
// These two measured fastest of the shapes tried on each ISA. Also tried on
// AVX2: 1 x 8, the two sign patterns of one channel each loading only their
// own 8 accumulators, v read by the FMAs from memory (9 live): half the
// pattern loops of 2 x 4, fewer instructions and mispredicted branches, but
// not faster (figures: bench/attention/README.md).
template <class A> struct Tiles {
  static constexpr int band_channels = kRegisters<A> == 32 ? 3 : 2;
  static constexpr int band_vecs = 4;
  static_assert(band_channels * band_vecs + band_vecs + 1 <= kRegisters<A>, "a pattern's live set fits");
};

// Padded sizes of one head's buffers (all multiples of the vector width).
template <class A> struct Layout {
  int d, half;
  int words;       // uint64 sign words per token (one bit per channel)
  int64_t dp;      // padded v / KV row width
  int64_t p2;      // padded 2d: ksum / kmean width
  int64_t mp;      // padded M row width (d)
  int64_t state;   // floats of one head's chunk state: KV (2d x dp) + ksum (p2)
  int64_t qstate;  // floats of one head's query state: M (2d x mp) + kmean (p2)
  explicit Layout(int head_dim)
      : d(head_dim), half(head_dim / 2), words((head_dim + 63) / 64), dp(round_up_lanes<A>(head_dim)),
        p2(round_up_lanes<A>(2 * head_dim)), mp(dp), state(2 * head_dim * dp + p2),
        qstate(2 * head_dim * mp + p2) {}
};

// Sign bits of a vector: bit i set when lane i of u has its sign bit set.
template <class A> inline uint64_t sign_bits(const Vec<A> &u) {
#if POLA_SIMD_X86
  if constexpr (kLanes<A> == 16)
    return uint64_t(_mm512_cmplt_epi32_mask(_mm512_castps_si512(u), _mm512_setzero_si512()));
  else
    return uint64_t(uint32_t(_mm256_movemask_ps(u)));
#else
  alignas(64) uint32_t t[kLanes<A>];
  xsimd::bitwise_cast<xsimd::batch<uint32_t, A>>(u).store_aligned(t);
  uint64_t bits = 0;
  for (int i = 0; i < kLanes<A>; ++i) bits |= uint64_t(t[i] >> 31) << i;
  return bits;
#endif
}

// m where u's sign bit is set, else 0 (neg_part), and the other way round
// (pos_part): a shift and an AND (AND-NOT) instead of a compare and a blend
// (vblendvps is 2-3 uops on Intel). Bit masks, not m - neg_part, so an
// infinite m splits into inf and 0, never inf - inf.
template <class A> inline Vec<A> neg_part(const Vec<A> &u, const Vec<A> &m) {
  using I = xsimd::batch<int32_t, A>;
  return xsimd::bitwise_cast<Vec<A>>((xsimd::bitwise_cast<I>(u) >> 31) & xsimd::bitwise_cast<I>(m));
}
template <class A> inline Vec<A> pos_part(const Vec<A> &u, const Vec<A> &m) {
  using I = xsimd::batch<int32_t, A>;
  return xsimd::bitwise_cast<Vec<A>>(~(xsimd::bitwise_cast<I>(u) >> 31) & xsimd::bitwise_cast<I>(m));
}

// Prefetches n floats from p into L2, one hint per 64-byte line. The
// feature passes fetch the token rows kPrefetchTokens ahead of the one they
// compute: a row of all heads is a few KB, so 4 KB pages end every other
// token, and there the hardware prefetchers stop. (Measured: 16 ahead into
// L2 a little faster; 4 ahead into L1 slower: bench/attention/README.md.)
inline void prefetch_floats(const float *p, int64_t n) {
#if POLA_SIMD_X86
  for (int64_t i = 0; i < n; i += 16) _mm_prefetch(reinterpret_cast<const char *>(p + i), _MM_HINT_T1);
#else
  for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(p + i, 0, 2);
#endif
}
constexpr int64_t kPrefetchTokens = 16;

// Mask of a block's first tb tokens.
inline uint64_t block_tokens(int64_t tb) { return tb >= 64 ? ~uint64_t(0) : (uint64_t(1) << tb) - 1; }

// The block's tokens (bits of `valid`, ascending) whose signs over channels
// neg[0..C) form pattern P (bit i of P set: channel i negative).
template <int C, int P> inline uint64_t pattern_tokens(uint64_t valid, const uint64_t *neg) {
  for (int i = 0; i < C; ++i) valid &= (P >> i) & 1 ? neg[i] : ~neg[i];
  return valid;
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

// Both passes' register tiles cover the same grid of one head: bands of
// Tiles::band_channels channels (then single-channel bands for the rest of
// d) times column tiles of Tiles::band_vecs vectors (then one narrower tile
// for the rest of nvec). tile(C, V, c0, col) gets C and V as
// std::integral_constant, so each shape is its own instantiation.
template <class A, int C, class F> inline void band_columns(int c0, int nvec, F &tile) {
  constexpr int V = Tiles<A>::band_vecs, L = kLanes<A>;
  int v0 = 0;
  for (; v0 + V <= nvec; v0 += V)
    tile(std::integral_constant<int, C>{}, std::integral_constant<int, V>{}, c0, int64_t(v0) * L);
  with_width<V - 1>(nvec - v0, [&](auto w) { tile(std::integral_constant<int, C>{}, w, c0, int64_t(v0) * L); });
}

template <class A, class F> inline void for_each_band_tile(int d, int nvec, F &&tile) {
  constexpr int C = Tiles<A>::band_channels;
  int c = 0;
  for (; c + C <= d; c += C) band_columns<A, C>(c, nvec, tile);
  for (; c < d; ++c) band_columns<A, 1>(c, nvec, tile);
}

// Folds the key pass's per-chunk partial states (chunk c of head h at
// states + c * per_chunk + h * state) into chunk 0's, in chunk order, so the
// sums are the same for any thread count; then finish(h, total) builds head
// h's query state from its total. One head per thread.
template <class A, class Finish>
void fold_chunk_states(float *states, int64_t chunks, int64_t per_chunk, int heads, int64_t state, int threads,
                       Finish finish) {
#pragma omp parallel for num_threads(threads) if (threads > 1 && heads > 1) schedule(static, 1)
  for (int h = 0; h < heads; ++h) {
    float *acc = states + h * state;
    for (int64_t c = 1; c < chunks; ++c) {
      const float *part = states + c * per_chunk + h * state;
      for (int64_t i = 0; i < state; i += kLanes<A>)
        (Vec<A>::load_aligned(acc + i) + Vec<A>::load_aligned(part + i)).store_aligned(acc + i);
    }
    finish(h, acc);
  }
}

// The plan every fp32 polarity core follows, whatever its passes:
//   key side:   chunk partials of the key state, cut by KeySplit (the chunks
//               depend only on n_k, never on the thread count), each written by
//               key_chunk(t0, t1, h0, h1, partial);
//   state:      the partials folded in chunk order, each head's sum turned into
//               its query state by build_state(head, kv, 1 / n_k, m_head);
//   query side: independent blocks of kQueryBlock tokens,
//               query_block(m, t0, t1, scratch), with a per-thread Scratch(lay, heads).
// So the output is bit-identical for any thread count. fence: the query
// blocks wrote with non-temporal stores, to be fenced before the region's
// closing barrier publishes them.
template <class A, class Scratch, class Lay, class KeyChunk, class BuildState, class QueryBlock>
void run_polarity_core(const PolarityAttnArgs &a, const Lay &lay, KeyChunk &&key_chunk, BuildState &&build_state,
                       QueryBlock &&query_block, bool fence) {
  const int threads = std::max(1, a.threads);
  const KeySplit split(a.n_k, a.heads, threads);
  const int64_t chunks = split.chunks, tasks = split.tasks;
  const int64_t per_chunk = int64_t(a.heads) * lay.state;
  ScratchBuffer states(chunks * per_chunk);
#pragma omp parallel for num_threads(threads) if (threads > 1 && tasks > 1) schedule(dynamic, 1)
  for (int64_t task = 0; task < tasks; ++task)
    key_chunk(split.t0(a.n_k, task), split.t1(a.n_k, task), split.h0(a.heads, task), split.h1(a.heads, task),
              states.data + split.chunk(task) * per_chunk);

  ScratchBuffer m(int64_t(a.heads) * lay.qstate);
  const float inv_n = a.n_k > 0 ? 1.0f / float(a.n_k) : 0.0f;
  fold_chunk_states<A>(states.data, chunks, per_chunk, a.heads, lay.state, threads, [&](int h, const float *kv) {
    build_state(h, kv, inv_n, m.data + h * lay.qstate);
  });

  const int64_t blocks = (a.n_q + kQueryBlock - 1) / kQueryBlock;
#pragma omp parallel num_threads(threads) if (threads > 1 && blocks > 1)
  {
    Scratch scratch(lay, a.heads);
#pragma omp for schedule(dynamic, 4) nowait
    for (int64_t b = 0; b < blocks; ++b)
      query_block(m.data, b * kQueryBlock, std::min(a.n_q, (b + 1) * kQueryBlock), scratch);
    if (fence) store_fence();
  }
}

} // namespace pola::kernels::simd::pola_detail
