// What a config implies for the shapes the model works on at a given input
// size: per stage the token grid, per block the attention window, shift, padding
// and token counts. Computed here once; the converter's tensor list, the
// engine's builders, the FLOP counter and the attention-map tool all read it,
// so no rule (e.g. Swin's "a stage that fits in its window attends globally")
// is written twice.
//
// Two sizes matter: the checkpoint's own (img_size x img_size), which fixes
// the shapes of stored tensors (position embeddings, positional encodings,
// relative-bias tables), and the size a run asks for (any H x W that
// check_input_size accepts). At the checkpoint's size both geometries agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace pola {

struct BlockGeometry {
  // The attention window (queries attend within it; a rectangle only when a
  // whole non-square stage is one window) and the cyclic shift applied before
  // partitioning (torch.roll by -shift on both axes).
  int64_t window_h = 0, window_w = 0, shift = 0;
  int64_t windows = 1;        // windows per image
  int64_t window_tokens = 0;  // query tokens per window (window_h * window_w)
  // Keys/values per window: PVT's spatial reduction shrinks them to a
  // kv_h x kv_w grid; otherwise the window itself.
  int64_t kv_h = 0, kv_w = 0, kv_tokens = 0;
  int64_t pos_enc_rows = 0;   // rows of a polarity block's positional_encoding at this size
  // Swin: the stage grid padded (bottom / right, zeros after norm1, as the
  // Swin detection backbone does) to a multiple of the window; = the stage grid otherwise.
  int64_t padded_h = 0, padded_w = 0;
  bool partitioned = false;   // tokens are rearranged into windows (several windows, shifted or padded)
  bool has_attn_mask = false; // a shifted block (the reference registers an attn_mask buffer for it)
};

struct StageGeometry {
  // The stage's input: an image (first stage) or the previous stage's grid.
  int64_t in_h = 0, in_w = 0, in_channels = 0;
  // Downsampling at the stage's start: PVT's patch-embedding kernel = stride;
  // Swin's patch embedding (first stage) or patch merging (2).
  int64_t patch = 0;
  int64_t res_h = 0, res_w = 0;  // the stage's token grid
  int64_t tokens = 0;            // res_h * res_w
  int64_t channels = 0;          // the stage's width
  std::vector<BlockGeometry> blocks;
};

struct ModelGeometry {
  int64_t height = 0, width = 0;  // the input image
  std::vector<StageGeometry> stages;
  // Width of the pooled embedding the classifier reads: the last stage's
  // channels, or a head projection's (PolaFormer++).
  int64_t pooled_width = 0;
};

// The geometry of a config that passed check_config, at its own img_size
// (check_config itself calls this once the family's sizes are known to be
// positive; sizes that are not yet checked never divide by zero here).
ModelGeometry model_geometry(const ModelConfig &c);
// The same at an input of height x width that check_input_size accepts.
ModelGeometry model_geometry(const ModelConfig &c, int64_t height, int64_t width);

// Input sides must be multiples of this (32 for the released models: the
// product of the downsampling strides).
int64_t input_size_multiple(const ModelConfig &c);
// The largest input side accepted (keeps every derived size far from overflow).
constexpr int64_t kMaxInputSide = 1 << 15;

// Throws InputError("<context>: input size HxW ...") naming the nearest valid
// sizes when height x width cannot be run (not a multiple of
// input_size_multiple, too small for a stage's spatial reduction, too large).
// `remedy`, when given, is appended to the message about multiples in
// brackets: what the caller's interface offers (a tool option, say), which
// this layer cannot know.
void check_input_size(const ModelConfig &c, int64_t height, int64_t width, const std::string &context,
                      const std::string &remedy = "");

// The nearest valid side at or above `side` (what --pad pads to).
int64_t padded_input_side(const ModelConfig &c, int64_t side);

} // namespace pola
