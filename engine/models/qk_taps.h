// Where a polarity-attention block's projected queries and keys (before the
// positional encoding and scaling) are in a plan's graph: which node's output
// holds them and at which columns. The builders choose the node names, so the
// answer is kept next to them, one small file per family
// (engine/models/<family>_taps.cpp), and reached through the builder table.
//
// Rows follow the block's geometry (model/geometry.h) for every family: the
// queries of window w (in row-major window order, after the cyclic shift) are
// rows [w * window_tokens, (w + 1) * window_tokens) of the q node, row-major
// inside the window; its keys are rows [w * kv_tokens, (w + 1) * kv_tokens) of
// the k node, row-major over the kv_h x kv_w key grid. One image's rows come
// first (batch 1 is what the attention-map tool runs).
#pragma once

#include <cstdint>
#include <string>

#include "model/model_config.h"

namespace pola::models {

struct QkTaps {
  std::string q_node;  // q = columns [q_col, q_col + dim) of this node's output
  int64_t q_col = 0;
  std::string k_node;  // k = columns [k_col, k_col + dim)
  int64_t k_col = 0;
};

// The taps of block `block` (model/tensor_list.h block_name) of width `dim`
// in a model of `family`. Throws std::logic_error for a family with none.
QkTaps qk_taps(Family family, const std::string &block, int64_t dim);

} // namespace pola::models
