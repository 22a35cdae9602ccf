// Where one polarity-attention block's tokens live: which row of the engine's
// q and k tensors holds a query location, which rows are the keys that query
// attends to, and where each key sits on the map we draw.
//
// PVT `block{i}.{j}`: queries are the stage's R x R tokens in row-major order;
// keys are all n = (R/r)^2 tokens of the (possibly spatially reduced) grid.
// Swin `layers.{i}.blocks.{j}` (L stages only): tokens are window-partitioned
// after a cyclic shift (SPEC 5), so a query attends only to the w x w tokens of
// its own window, and the positional encoding is indexed by the position
// inside the window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace pola::attention_map {

struct BlockLayout {
  std::string block;  // e.g. "block2.0", "layers.1.blocks.1"
  Family family = Family::pvt;
  int heads = 0, dim = 0;
  int64_t grid = 0;      // query grid side R (stage resolution)
  int64_t key_grid = 0;  // side of the grid the map is drawn on (PVT: R/r, Swin: R)
  int64_t window = 0, shift = 0;  // Swin only
  int64_t q_rows = 0, k_rows = 0; // rows of q resp. k per image in the engine's tensors
  int64_t pe_rows = 0;            // rows of the block's positional_encoding
};

// The keys one query attends to.
struct QueryKeys {
  int64_t query_row = 0;            // row of q (per image)
  std::vector<int64_t> key_rows;    // rows of k (per image)
  std::vector<int64_t> pe_rows;     // matching rows of positional_encoding
  std::vector<int64_t> map_index;   // matching cell of the key_grid x key_grid map
};

// The layout of block `name`. Throws pola::InputError when the model has no
// such block or it is not a polarity (L) block; the message lists valid names.
BlockLayout find_block(const ModelConfig &cfg, const std::string &name);

// The keys of the query at token (qy, qx) of the block's query grid.
QueryKeys keys_of_query(const BlockLayout &layout, int64_t qy, int64_t qx);

} // namespace pola::attention_map
