// Global softmax attention with 2-D RoPE (GlobalAttnArgs, SPEC-polaformerpp
// 2.8), flash style: no n x n buffer exists.
// Phase 1, per (head, key block): k rotated and transposed into a (d, kb)
// tile, v copied into contiguous rows padded to whole vectors, so that every
// later read is an aligned vector load. Phase 2, per (head, query block): the
// block's q rows rotated and scaled, then for each key block a register-tiled
// score block (q broadcast, keys along the vector), an online softmax update
// of each row's running max and sum, and p @ v accumulated into the block's
// output rows, rescaled when the max grows. The scratch is the rotated k
// and the copied v of every head (the size of the inputs, built once rather
// than once per query block) plus a few block rows per thread.
// When the heads split evenly enough over the threads, each thread runs both
// phases for its own heads with no barrier between them (see by_head).
// Work items never share outputs
// and none depends on the thread count, so results are bit-identical for any
// `threads`.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/refuse.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

namespace softmax_detail {

constexpr int kMaxKeyBlock = 128; // keys per block: the score block stays in L1
constexpr int kMaxVecs = 4;       // vectors per register tile (per query)
// Queries per score tile: four queries of four vectors fill 16 of AVX-512's
// 32 registers; with AVX2's 16, two.
template <class A> constexpr int kScoreQueries = kRegisters<A> == 32 ? 4 : 2;
template <class A> constexpr int kAccumulators = kRegisters<A> / 2;
// Queries per block, i.e. per pass over a key block: each K^T and V block
// fetched (from L2 when both do not fit L1) feeds this many rows.
template <class A> constexpr int kBlockQueries = kRegisters<A> == 32 ? 16 : 8;

// y = rotate(x at token t) * s over d channels (no rotation without a
// table), whole vectors into y (zero past d), pairs never split since the
// vectors start at even channels.
template <class A> inline void rotate_row(const float *x, int d, const RopeTable &rope, int64_t t, float s, float *y) {
  constexpr int L = kLanes<A>;
  const Vec<A> sv(s);
  if (!rope) {
    for (int c = 0; c < d; c += L) (load_first<A>(x + c, d - c < L ? d - c : L) * sv).store_aligned(y + c);
    return;
  }
  const float *cs = rope.cos + t * rope.width, *sn = rope.sin + t * rope.width;
  for (int c = 0; c < d; c += L) {
    const int m = d - c < L ? d - c : L;
    const Vec<A> v = load_first<A>(x + c, m), co = load_first<A>(cs + c, m), si = load_first<A>(sn + c, m);
    // fmaddsub: even lanes v cos - w, odd lanes v cos + w, w = (v with its pairs swapped) sin.
#if POLA_SIMD_X86
    if constexpr (kLanes<A> == 16)
      (Vec<A>(_mm512_fmaddsub_ps(v, co, Vec<A>(_mm512_permute_ps(v, 0xB1)) * si)) * sv).store_aligned(y + c);
    else
      (Vec<A>(_mm256_fmaddsub_ps(v, co, Vec<A>(_mm256_permute_ps(v, 0xB1)) * si)) * sv).store_aligned(y + c);
#else
    (rotate_pairs<A>(v, co, si) * sv).store_aligned(y + c);
#endif
  }
}

// s[r, c0 : c0 + V*L] = sum_i q[r, i] kt[i, c0 : ...] for Q query rows.
template <class A, int Q, int V>
inline void score_tile(const float *q, int64_t dp, int d, const float *kt, int kb, int c0, float *s) {
  constexpr int L = kLanes<A>;
  Vec<A> acc[Q][V];
  for (int r = 0; r < Q; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = Vec<A>(0.0f);
  for (int i = 0; i < d; ++i) {
    Vec<A> kv[V];
    for (int v = 0; v < V; ++v) kv[v] = Vec<A>::load_aligned(kt + int64_t(i) * kb + c0 + v * L);
    for (int r = 0; r < Q; ++r) {
      const Vec<A> b(q[r * dp + i]);
      for (int v = 0; v < V; ++v) acc[r][v] = xsimd::fma(b, kv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < Q; ++r)
    for (int v = 0; v < V; ++v) acc[r][v].store_aligned(s + int64_t(r) * kb + c0 + v * L);
}

// Scores of Q queries against the first `valid` keys of a block (whole vectors).
template <class A, int Q>
inline void scores(const float *q, int64_t dp, int d, const float *kt, int kb, int valid, float *s) {
  constexpr int L = kLanes<A>;
  const int nvec = (valid + L - 1) / L;
  int v0 = 0;
  for (; v0 + kMaxVecs <= nvec; v0 += kMaxVecs) score_tile<A, Q, kMaxVecs>(q, dp, d, kt, kb, v0 * L, s);
  if (v0 < nvec)
    with_width<kMaxVecs - 1>(nvec - v0, [&](auto w) {
      score_tile<A, Q, decltype(w)::value>(q, dp, d, kt, kb, v0 * L, s);
    });
}

// One row's online softmax step over `valid` scores: raises the running max
// m, turns the scores into exp(s - m) in place (0 past valid), folds their
// sum into l and returns the factor by which earlier sums must be rescaled.
template <class A>
inline float online_row(float *s, int valid, float &m, float &l, const Vec<A> &lanes) {
  constexpr int L = kLanes<A>;
  const Vec<A> neg_inf(-INFINITY);
  Vec<A> mx = neg_inf;
  for (int j = 0; j < valid; j += L) {
    Vec<A> v = Vec<A>::load_aligned(s + j);
    if (valid - j < L) v = xsimd::select(lanes < Vec<A>(float(valid - j)), v, neg_inf);
    mx = xsimd::max(mx, v);
  }
  const float block_max = lane_max<A>(mx);
  const float m_new = block_max > m ? block_max : m;
  // The first block has nothing to rescale (and exp(-inf - m) is not needed);
  // an unchanged max rescales by exactly 1 without a libm call.
  const float corr = m == -INFINITY ? 0.0f : m == m_new ? 1.0f : std::exp(m - m_new);
  const Vec<A> vm(m_new);
  Vec<A> sum(0.0f);
  for (int j = 0; j < valid; j += L) {
    Vec<A> e = exp_fp32<A>(Vec<A>::load_aligned(s + j) - vm);
    if (valid - j < L) e = xsimd::select(lanes < Vec<A>(float(valid - j)), e, Vec<A>(0.0f));
    e.store_aligned(s + j);
    sum += e;
  }
  l = l * corr + xsimd::hadd(sum);
  m = m_new;
  return corr;
}

// o[r, c0 : c0 + V*L] = corr[r] o[r, ...] + sum_{j < valid} p[r, j] vb[j, ...] for Q queries.
template <class A, int Q, int V>
inline void value_tile(const float *p, int kb, int valid, const float *vb, int64_t dp, int64_t c0,
                       const float *corr, float *o) {
  constexpr int L = kLanes<A>;
  // The block's sum starts from zero and joins the running one at the end:
  // two short chains of additions round far less than one over all n keys.
  Vec<A> acc[Q][V];
  for (int r = 0; r < Q; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = Vec<A>(0.0f);
  for (int j = 0; j < valid; ++j) {
    Vec<A> vv[V];
    for (int v = 0; v < V; ++v) vv[v] = Vec<A>::load_aligned(vb + j * dp + c0 + v * L);
    for (int r = 0; r < Q; ++r) {
      const Vec<A> b(p[int64_t(r) * kb + j]);
      for (int v = 0; v < V; ++v) acc[r][v] = xsimd::fma(b, vv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < Q; ++r)
    for (int v = 0; v < V; ++v) {
      float *dst = o + r * dp + c0 + v * L;
      xsimd::fma(Vec<A>::load_aligned(dst), Vec<A>(corr[r]), acc[r][v]).store_aligned(dst);
    }
}

// The nq rows of o, in column groups of up to kMaxVecs vectors, each over as
// many queries as half the registers hold.
template <class A>
inline void values(const float *p, int kb, int valid, const float *vb, int64_t dp, int nq, const float *corr,
                   float *o) {
  constexpr int L = kLanes<A>;
  const int nvec = int(dp / L);
  for (int v0 = 0; v0 < nvec; v0 += kMaxVecs) {
    with_width<kMaxVecs>(nvec - v0 < kMaxVecs ? nvec - v0 : kMaxVecs, [&](auto w) {
      constexpr int V = decltype(w)::value;
      constexpr int kQ = kAccumulators<A> / V < kBlockQueries<A> ? kAccumulators<A> / V : kBlockQueries<A>;
      for (int q0 = 0; q0 < nq; q0 += kQ)
        with_width<kQ>(nq - q0 < kQ ? nq - q0 : kQ, [&](auto m) {
          value_tile<A, decltype(m)::value, V>(p + int64_t(q0) * kb, kb, valid, vb, dp, int64_t(v0) * L,
                                               corr + q0, o + q0 * dp);
        });
    });
  }
}

} // namespace softmax_detail

template <class A> void softmax_attention(const GlobalAttnArgs &a) {
  using namespace softmax_detail;
  constexpr int L = kLanes<A>, QB = kBlockQueries<A>, QS = kScoreQueries<A>;
  const int d = a.head_dim;
  if (a.rope && (a.rope.width != d || d % 2 != 0))
    refuse("softmax_attention", "the RoPE table must be head_dim wide and head_dim even");
  if (a.n <= 0 || a.heads <= 0 || d <= 0) return;
  const int64_t n = a.n, dp = round_up_lanes<A>(d);
  // Key blocks of equal size (whole vectors), so a short tail block does not
  // pay for a full one.
  const int64_t key_blocks = (n + kMaxKeyBlock - 1) / kMaxKeyBlock;
  const int kb = int(round_up_lanes<A>((n + key_blocks - 1) / key_blocks));
  const int64_t n_pad = key_blocks * kb, query_blocks = (n + QB - 1) / QB;
  // Shared, written in phase 1 and read in phase 2; pads stay zero.
  ScratchBuffer kt_all(size_t(a.heads) * key_blocks * d * kb), v_all(size_t(a.heads) * n_pad * dp);
  const int threads = a.threads > 1 ? a.threads : 1;
// With at least as many heads as threads in whole rounds, each thread
  // takes whole heads, keys then queries, and no thread waits for another
  // between the two (a barrier costs much when the threads share a loaded
  // machine); otherwise all threads build every head's keys, then split the
  // query blocks. Either way each output is computed by the same operations
  // in the same order.
  const bool by_head = threads == 1 || (a.heads >= threads && (a.heads % threads == 0 || a.heads >= 3 * threads));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    ScratchBuffer qs(QB * dp), s(QB * kb), o(QB * dp), krow(dp);
    alignas(64) float lane_index[L];
    for (int i = 0; i < L; ++i) lane_index[i] = float(i);
    const Vec<A> lanes = Vec<A>::load_aligned(lane_index);

    // Key block `item` of the flattened (head, key block) range: k rotated and transposed, v copied.
    const auto build_keys = [&](int64_t item) {
      const int64_t h = item / key_blocks, j0 = (item % key_blocks) * kb;
      const int valid = int(n - j0 < kb ? n - j0 : kb);
      float *kt = kt_all.data + item * d * kb, *vb = v_all.data + (h * n_pad + j0) * dp;
      for (int j = 0; j < valid; ++j) {
        rotate_row<A>(a.k + (j0 + j) * a.ld_k + h * d, d, a.rope, j0 + j, 1.0f, krow.data);
        for (int c = 0; c < d; ++c) kt[int64_t(c) * kb + j] = krow.data[c];
        const float *vr = a.v + (j0 + j) * a.ld_v + h * d;
        for (int c = 0; c < d; ++c) vb[j * dp + c] = vr[c];
      }
    };
    // Query block `item` of the flattened (head, query block) range.
    const auto attend = [&](int64_t item) {
      const int64_t h = item / query_blocks, i0 = (item % query_blocks) * QB;
      const int nb = int(n - i0 < QB ? n - i0 : QB);
      float m[QB], l[QB], corr[QB];
      for (int r = 0; r < nb; ++r) {
        rotate_row<A>(a.q + (i0 + r) * a.ld_q + h * d, d, a.rope, i0 + r, a.scale, qs.data + r * dp);
        for (int64_t c = 0; c < dp; ++c) o.data[r * dp + c] = 0.0f;
        m[r] = -INFINITY;
        l[r] = 0.0f;
      }
      for (int64_t blk = 0; blk < key_blocks; ++blk) {
        const int64_t j0 = blk * kb;
        const int valid = int(n - j0 < kb ? n - j0 : kb);
        const float *kt = kt_all.data + (h * key_blocks + blk) * d * kb, *vb = v_all.data + (h * n_pad + j0) * dp;
        for (int q0 = 0; q0 < nb; q0 += QS)
          with_width<QS>(nb - q0 < QS ? nb - q0 : QS, [&](auto w) {
            scores<A, decltype(w)::value>(qs.data + q0 * dp, dp, d, kt, kb, valid, s.data + int64_t(q0) * kb);
          });
        for (int r = 0; r < nb; ++r) corr[r] = online_row<A>(s.data + int64_t(r) * kb, valid, m[r], l[r], lanes);
        values<A>(s.data, kb, valid, vb, dp, nb, corr, o.data);
      }
      for (int r = 0; r < nb; ++r) {
        const Vec<A> inv(1.0f / l[r]);
        float *out = a.out + (i0 + r) * a.ld_out + h * d;
        for (int c = 0; c < d; c += L)
          store_first<A>(out + c, Vec<A>::load_aligned(o.data + r * dp + c) * inv, d - c < L ? d - c : L);
      }
    };

    if (by_head) {
#pragma omp for schedule(static) nowait
      for (int64_t h = 0; h < a.heads; ++h) {
        for (int64_t blk = 0; blk < key_blocks; ++blk) build_keys(h * key_blocks + blk);
        for (int64_t qb = 0; qb < query_blocks; ++qb) attend(h * query_blocks + qb);
      }
    } else {
#pragma omp for schedule(static)
      for (int64_t item = 0; item < a.heads * key_blocks; ++item) build_keys(item);
      // (the implicit barrier: every tile is ready)
#pragma omp for schedule(static) nowait
      for (int64_t item = 0; item < a.heads * query_blocks; ++item) attend(item);
    }
  }
}

} // namespace pola::kernels::simd
