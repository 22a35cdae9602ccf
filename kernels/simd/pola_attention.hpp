// Polarity-aware linear attention core (SPEC section 3, steps 2-7), one
// template for every ISA. Linear in tokens; nothing n_q x n_k ever exists.
//
// Key side, one pass over k and v. Tokens are cut into chunks whose number
// depends only on n_k (never on the thread count); each chunk accumulates, per
// head, the unnormalised state
//     KV   = sum_t phi_k[t]^T v[t]   (2d x d; columns [v1 | v2])
//     ksum = sum_t phi_k[t]          (2d)
// with phi_k = [f(relu(k')), f(relu(-k'))], k' = (k + pos_enc) * inv_scale, f
// the feature map of args.feature (pola_feature_map.hpp; abs_pow: f(m) = m^p).
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
// out = sum_j f(|q'_j|) * state[j + d * (q'_j < 0)]: d row-FMAs instead of 2d.
// The same sign-pattern bands as on the key side do this: a band's 2C rows of
// M sit in registers and each token of a pattern adds its C products to its
// output row (in L1). The two kmean columns are done as vector dot products
// while the features are computed, so the FMA part works on M = the first d
// columns only (d padded to the vector width instead of d + 2: 4 AVX-512
// vectors, not 5, at d = 64). Heads whose M fits in L1 (gather_fits, from the L1d size) gather
// instead, branch-free: pola_query_gather.hpp.
//
// A large output is written with non-temporal stores (see kPolaStreamOutBytes).
//
// Extra memory, independent of N: min(32, ceil(n_k / 256)) chunk partials of
// heads x (2d x d_pad + 2d) floats (8.5 MB at 8 heads, d = 64), the query
// state heads x (2d x d_pad + 2d), and per-thread block scratch (~0.5 MB).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/attention_args.h"
#include "kernels/scratch.h"
#include "kernels/simd/common.hpp"
#include "kernels/simd/pola_attention_common.hpp"
#include "kernels/simd/pola_feature_map.hpp"
#include "kernels/simd/pola_key_pass.hpp"
#include "kernels/simd/pola_query_pass.hpp"
#include "kernels/simd/pola_rope_attention.hpp"

namespace pola::kernels::simd {

namespace pola_detail {

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

template <class A, class Phi> void polarity_attention(const PolarityAttnArgs &a, const Phi &phi) {
  const Layout<A> lay(a.head_dim);
  // A large output bypasses the caches: it is written once and read by no one
  // soon, and a normal store would first read every line from DRAM.
  const bool stream_out = a.head_dim % kLanes<A> == 0 && a.ld_out % kLanes<A> == 0 &&
                          reinterpret_cast<uintptr_t>(a.out) % (kLanes<A> * sizeof(float)) == 0 &&
                          double(a.n_q) * double(a.ld_out) * sizeof(float) >= kPolaStreamOutBytes;
  run_polarity_core<A, QueryScratch<A>>(
      a, lay,
      [&](int64_t t0, int64_t t1, int h0, int h1, float *partial) { key_chunk<A>(a, phi, lay, t0, t1, h0, h1, partial); },
      [&](int, const float *kv, float inv_n, float *m) { build_query_state<A>(lay, kv, inv_n, m); },
      [&](const float *m, int64_t t0, int64_t t1, QueryScratch<A> &scratch) {
        query_block<A>(a, phi, lay, m, t0, t1, stream_out, scratch);
      },
      stream_out);
}

} // namespace pola_detail

// The core with the feature map of a.feature (an unknown kind is refused):
// exp_sigmoid runs the dense core (pola_rope_attention.hpp), the sign-split
// maps this one.
template <class A> void polarity_attention(const PolarityAttnArgs &a) {
  with_feature_map<A>(a.feature, [&](const auto &phi) {
    if constexpr (std::is_same_v<std::decay_t<decltype(phi)>, ExpSigmoidFeature<A>>) {
      pola_detail::check_exp_sigmoid_args<A>(a);
      if (a.n_q > 0 && a.heads > 0 && a.head_dim > 0) pola_detail::rope_polarity_attention<A>(a, phi);
    } else {
      if (a.n_q > 0 && a.heads > 0 && a.head_dim > 0) pola_detail::polarity_attention<A>(a, phi);
    }
  });
}

} // namespace pola::kernels::simd
