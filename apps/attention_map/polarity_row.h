// One row of a polarity-attention block's implicit attention matrix: how much
// one query looks at each key. The engine never forms this (SPEC 3 computes
// the output in O(N d^2)); this is the explicit, per-key view of the same
// features, for visualisation:
//
//   k' = (k + positional_encoding) / softplus(scale),  q' = q / softplus(scale)
//   p  = 1 + alpha * sigmoid(power)                        per (head, channel)
//   q_sim = [relu(q')^p, relu(-q')^p], q_opp = [relu(-q')^p, relu(q')^p],
//   phi_k = [relu(k')^p, relu(-k')^p]                      per head, 2d wide
//   A_sim[j] = q_sim . phi_k[j] / sum_j' q_sim . phi_k[j']   (A_opp likewise)
//   map[j]   = mean over heads of (A_sim[j] + A_opp[j]) / 2
//
// The map sums to 1 over the keys. The reference's 1e-6 in the denominator
// is left out so that it does; when a head's denominator is exactly 0 (the
// query is all zeros after relu) its weights are taken as uniform.
#pragma once

#include <cstdint>
#include <vector>

namespace pola::attention_map {

struct PolarityParams {
  int heads = 0, head_dim = 0;
  double alpha = 4.0;
  const float *power = nullptr;  // raw parameter, (1, heads, 1, head_dim)
  const float *scale = nullptr;  // raw parameter, (1, 1, heads * head_dim)
};

// q: one query row (C = heads * head_dim floats). keys[j] and pos[j]: key row
// j and its positional-encoding row (C floats each). Returns one weight per
// key, computed in double precision.
std::vector<double> polarity_attention_row(const PolarityParams &params, const float *q,
                                           const std::vector<const float *> &keys,
                                           const std::vector<const float *> &pos);

} // namespace pola::attention_map
