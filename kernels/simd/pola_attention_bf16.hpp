// The polarity attention core with its two products in bf16 (fp32
// accumulation): KV = phi_k^T v in the key pass, q_sim @ M in the query
// pass, done by the product policy P (pola_bf16_products.hpp: AMX tiles or
// AVX512-BF16 dot products; everything else is this one source). The feature
// map of args.feature (fp32 at bf16 accuracy, pola_bf16_feature_map.hpp;
// abs_pow: relative error 1.2e-4), ksum, kmean, the denominators and the
// normalisation stay fp32, as in the fp32 core (pola_attention.hpp), whose
// state algebra and chunking this follows: chunks depend only on n_k and are
// summed in chunk order, so the output is bit-identical for any thread count.
// Inputs and outputs are fp32; bf16 exists only in per-thread block scratch
// and in the query state. Error: each operand rounded to 8 significant bits
// (relative 2^-9), summed in fp32 over 2d products (query) and n_k tokens
// (key); measured against the fp32 core in bench-attention --precision bf16
// (figures: bench/attention/README.md).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/scratch.h"
#include "kernels/simd/pola_attention_common.hpp"
#include "kernels/simd/pola_bf16_key_pass.hpp"
#include "kernels/simd/pola_bf16_products.hpp"
#include "kernels/simd/pola_bf16_query_pass.hpp"
#include "kernels/simd/pola_bf16_tiles.hpp"

namespace pola::kernels::simd::bf16_detail {

// One head's query state from its summed key state, scaled by 1/n:
// M = [KV1 | swap_rows(KV2)] / n (2d x d) as bf16 VNNI rows (row pairs
// interleaved, kp/2 rows of 2 np), then kmean = ksum / n in fp32.
POLA_BF16_TARGET inline void build_query_state(const Bf16Layout &lay, const float *kv, float inv_n, float *qs) {
  const int d = lay.d;
  uint16_t *mv = reinterpret_cast<uint16_t *>(qs);
  alignas(64) float rows[2][128]; // two rows of M, 16-column pieces (np <= 128 checked by the caller)
  for (int64_t r = 0; r < lay.kp; r += 2) {
    for (int k = 0; k < 2; ++k) {
      const int64_t row = r + k, sw = (row + d) % (2 * d); // the row q_opp pairs with
      for (int64_t c = 0; c < lay.np; ++c)
        rows[k][c] = row >= 2 * d || c >= d ? 0.0f : kv[(c < lay.half ? row : sw) * lay.np + c] * inv_n;
    }
    for (int64_t c = 0; c < lay.np; c += 16)
      store_pair(_mm512_load_ps(rows[0] + c), _mm512_load_ps(rows[1] + c), mv + r / 2 * 2 * lay.np + 2 * c);
  }
  float *kmean = qs + lay.kp * lay.np / 2;
  const float *ksum = kv + lay.kp * lay.np;
  for (int64_t r = 0; r < lay.kp; ++r) kmean[r] = r < 2 * d ? ksum[r] * inv_n : 0.0f;
}

// Whether the core takes a shape: heads up to kMaxHeadDim channels and a
// feature map the bf16 cores take (bf16_feature_map: not exp_sigmoid, which
// stays fp32) (the registry's fits(); the core refuses others).
inline bool polarity_bf16_fits(const PolarityAttnArgs &a) {
  return a.head_dim <= kMaxHeadDim && bf16_feature_map(a.feature);
}

template <class P, class Phi>
POLA_BF16_TARGET inline void polarity_attention_bf16(const PolarityAttnArgs &a, const Phi &phi) {
  using namespace pola_detail;
  const Bf16Layout lay(a.head_dim);
  const int threads = std::max(1, a.threads);

  const KeySplit split(a.n_k, a.heads, threads); // the fp32 core's chunks and tasks
  const int64_t chunks = split.chunks, tasks = split.tasks;
  const int64_t per_chunk = int64_t(a.heads) * lay.state;
  ScratchBuffer states(chunks * per_chunk);
#pragma omp parallel num_threads(threads) if (threads > 1 && tasks > 1)
  {
    P::begin();
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t task = 0; task < tasks; ++task)
      key_chunk<P>(a, phi, lay, split.t0(a.n_k, task), split.t1(a.n_k, task), split.h0(a.heads, task),
                split.h1(a.heads, task), states.data + split.chunk(task) * per_chunk);
    P::end();
  }

  ScratchBuffer m(int64_t(a.heads) * lay.qstate);
  const float inv_n = a.n_k > 0 ? 1.0f / float(a.n_k) : 0.0f;
  fold_chunk_states<A>(states.data, chunks, per_chunk, a.heads, lay.state, threads, [&](int h, const float *kv) {
    build_query_state(lay, kv, inv_n, m.data + h * lay.qstate);
  });

  const int64_t blocks = (a.n_q + kQueryBlock - 1) / kQueryBlock;
  const bool stream_out = a.head_dim % 16 == 0 && a.ld_out % 16 == 0 &&
                          reinterpret_cast<uintptr_t>(a.out) % 64 == 0 &&
                          double(a.n_q) * double(a.ld_out) * sizeof(float) >= kPolaStreamOutBytes;
#pragma omp parallel num_threads(threads) if (threads > 1 && blocks > 1)
  {
    P::begin();
    QueryScratch scratch(lay, a.heads);
#pragma omp for schedule(dynamic, 4) nowait
    for (int64_t b = 0; b < blocks; ++b)
      query_block<P>(a, phi, lay, m.data, b * kQueryBlock, std::min(a.n_q, (b + 1) * kQueryBlock), stream_out, scratch);
    if (stream_out) store_fence();
    P::end();
  }
}

// The core with product policy P and the feature map of a.feature; refuses
// what polarity_bf16_fits() rejects.
template <class P> void polarity_attention_bf16(const PolarityAttnArgs &a) {
  if (a.head_dim > kMaxHeadDim) refuse("polarity_attention bf16", "head_dim above kMaxHeadDim (128)");
  with_feature_map_bf16(a.feature, [&](const auto &phi) {
    if (a.n_q > 0 && a.heads > 0 && a.head_dim > 0) polarity_attention_bf16<P>(a, phi);
  });
}

} // namespace pola::kernels::simd::bf16_detail
