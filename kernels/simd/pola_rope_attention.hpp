// The polarity core for the exp_sigmoid feature map (PolaFormer++,
// SPEC-polaformerpp 2.7), with optional RoPE on the numerator's features.
// Same plan as the sign-split core (pola_attention.hpp), dense passes instead
// of sign-pattern bands (pola_rope_passes.hpp):
//   key side:   chunk partials of KV = sum_t RoPE(psi_t)^T v_t (2d x d) and
//               ksum = sum_t psi_t (un-rotated), the chunks cut by KeySplit
//               and folded in chunk order, so the output is bit-identical
//               for any thread count;
//   state:      M_same = KV[:, :d/2] / n, M_opp = KV[:, d/2:] / n, kmean = ksum / n;
//   query side: independent blocks of kQueryBlock tokens.
// Extra memory, independent of N: the chunk partials (as the sign-split
// core's), the query state heads x (2 x 2d x ceil(d/2) + 2d), and per-thread
// block scratch.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/refuse.h"
#include "kernels/scratch.h"
#include "kernels/simd/pola_attention_common.hpp"
#include "kernels/simd/pola_feature_map.hpp"
#include "kernels/simd/pola_rope_passes.hpp"

namespace pola::kernels::simd::pola_detail {

// Refuses what the dense core cannot run: missing weights or a table that
// does not fit the shape (rope_fits, the registry's predicate). A template
// like everything here, so each ISA's unit keeps its own copy.
template <class A> void check_exp_sigmoid_args(const PolarityAttnArgs &a) {
  if (!a.feature.sigma_same || !a.feature.sigma_opp)
    refuse("polarity_attention fp32", "exp_sigmoid without sigma_same / sigma_opp");
  if (!rope_fits(a)) refuse("polarity_attention fp32", "rope table not 2*head_dim wide or n_q != n_k");
}

template <class A> void rope_polarity_attention(const PolarityAttnArgs &a, const ExpSigmoidFeature<A> &phi) {
  const DenseLayout<A> lay(a.head_dim);
  const int threads = std::max(1, a.threads);

  const KeySplit split(a.n_k, a.heads, threads);
  const int64_t chunks = split.chunks, tasks = split.tasks;
  const int64_t per_chunk = int64_t(a.heads) * lay.state;
  ScratchBuffer states(chunks * per_chunk);
#pragma omp parallel for num_threads(threads) if (threads > 1 && tasks > 1) schedule(dynamic, 1)
  for (int64_t task = 0; task < tasks; ++task)
    rope_key_chunk<A>(a, phi, lay, split.t0(a.n_k, task), split.t1(a.n_k, task), split.h0(a.heads, task),
                      split.h1(a.heads, task), states.data + split.chunk(task) * per_chunk);

  ScratchBuffer m(int64_t(a.heads) * lay.qstate);
  const float inv_n = a.n_k > 0 ? 1.0f / float(a.n_k) : 0.0f;
  fold_chunk_states<A>(states.data, chunks, per_chunk, a.heads, lay.state, threads, [&](int h, const float *kv) {
    build_rope_query_state<A>(lay, kv, inv_n, m.data + h * lay.qstate);
  });

  const int64_t blocks = (a.n_q + kQueryBlock - 1) / kQueryBlock;
#pragma omp parallel num_threads(threads) if (threads > 1 && blocks > 1)
  {
    RopeQueryScratch<A> scratch(lay, a.heads);
#pragma omp for schedule(dynamic, 4) nowait
    for (int64_t b = 0; b < blocks; ++b)
      rope_query_block<A>(a, phi, lay, m.data, b * kQueryBlock, std::min(a.n_q, (b + 1) * kQueryBlock), scratch);
  }
}

} // namespace pola::kernels::simd::pola_detail
