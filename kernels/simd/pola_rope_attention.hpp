// The polarity core for the exp_sigmoid feature map (PolaFormer++,
// SPEC-polaformerpp 2.7), with optional RoPE on the numerator's features.
// The same plan as the sign-split core (run_polarity_core,
// pola_attention_common.hpp), with dense passes instead of sign-pattern bands
// (pola_rope_passes.hpp):
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
  run_polarity_core<A, RopeQueryScratch<A>>(
      a, lay,
      [&](int64_t t0, int64_t t1, int h0, int h1, float *partial) {
        rope_key_chunk<A>(a, phi, lay, t0, t1, h0, h1, partial);
      },
      [&](int, const float *kv, float inv_n, float *m) { build_rope_query_state<A>(lay, kv, inv_n, m); },
      [&](const float *m, int64_t t0, int64_t t1, RopeQueryScratch<A> &scratch) {
        rope_query_block<A>(a, phi, lay, m, t0, t1, scratch);
      },
      /*fence=*/false);
}

} // namespace pola::kernels::simd::pola_detail
