// What a config implies for the shapes the model works on: per stage the token
// grid, per block the attention window, shift and token counts. Computed here
// once; the converter's tensor list, the engine's builders, the FLOP counter
// and the attention-map tool all read it, so no rule (e.g. Swin's "a stage that
// fits in its window attends globally") is written twice.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace pola {

struct BlockGeometry {
  // Side of the square attention window (queries attend within it) and the
  // cyclic shift applied before partitioning (torch.roll by -shift).
  int64_t window = 0, shift = 0;
  int64_t windows = 1;        // windows per image
  int64_t window_tokens = 0;  // query tokens per window (window^2)
  // Keys/values per window: PVT's spatial reduction shrinks them to a
  // kv_side x kv_side grid; otherwise kv_side == window.
  int64_t kv_side = 0, kv_tokens = 0;
  int64_t pos_enc_rows = 0;   // rows of a polarity block's positional_encoding
  bool partitioned = false;   // tokens are rearranged into windows (several windows, or shifted)
  bool has_attn_mask = false; // the reference registers an attn_mask buffer for this block
};

struct StageGeometry {
  // The stage's input: an image (first stage) or the previous stage's grid.
  int64_t in_side = 0, in_channels = 0;
  // Downsampling at the stage's start: PVT's patch-embedding kernel = stride;
  // Swin's patch embedding (first stage) or patch merging (2).
  int64_t patch = 0;
  int64_t res = 0;       // side of the stage's token grid
  int64_t tokens = 0;    // res^2
  int64_t channels = 0;  // the stage's width
  std::vector<BlockGeometry> blocks;
};

struct ModelGeometry {
  std::vector<StageGeometry> stages;
};

// The geometry of a config that passed check_config (check_config itself
// calls this once the family's sizes are known to be positive; sizes that
// are not yet checked never divide by zero here).
ModelGeometry model_geometry(const ModelConfig &c);

} // namespace pola
