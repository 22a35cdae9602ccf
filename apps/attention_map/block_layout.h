// Where one polarity-attention block's tokens live: which row of the engine's
// q and k tensors holds a query location, which rows are the keys that query
// attends to, and where each key sits on the map we draw. All of it follows
// from the block's geometry (model/geometry.h) and the row order the builders
// promise (engine/models/qk_taps.h), the same for every family:
//
// tokens are cyclically shifted, then split into windows; a query attends to
// the keys of its own window, whose key grid is the window itself or, with
// PVT's spatial reduction, the reduced grid. A block that attends globally is
// one window without shift (every PVT block; a Swin stage that fits its
// window). The positional encoding is indexed by the key's place in its
// window's key grid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace pola::attention_map {

struct BlockLayout {
  std::string block;  // its key prefix, e.g. "block2.0", "layers.1.blocks.1"
  int heads = 0, dim = 0;
  int64_t grid = 0;               // query grid side R (stage resolution, the checkpoint's size)
  int64_t window = 0, shift = 0;  // window side (R when it attends globally) and cyclic shift
  int64_t kv_side = 0;            // side of a window's key grid (the window, or R/r after spatial reduction)
  int64_t key_grid = 0;           // side of the grid the map is drawn on: every window's keys in place
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
