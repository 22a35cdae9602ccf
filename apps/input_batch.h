// An NCHW float batch read from a .npy for `pola run` / `pola features`: its
// shape is checked against the model (channels; any height and width the model
// accepts, model/geometry.h), or, with --pad, the images are padded with zeros
// at the bottom and right to the next valid size.
#pragma once

#include <optional>
#include <string>

#include "engine/io/npy.h"
#include "model/model_config.h"

namespace pola::app {

struct InputBatch {
  io::NpyArray array;  // (batch, channels, height, width) after any padding
  int64_t batch = 0, height = 0, width = 0;
  int64_t original_height = 0, original_width = 0;  // before --pad
};

// Throws InputError naming `path` when the shape cannot be run (and `pad`
// cannot fix it), the batch is out of 1..4096, or the array is not 4-D.
InputBatch read_input_batch(const std::string &path, const ModelConfig &cfg, bool pad);

// The batch and size a run on the .npy at `path` would take (after any
// padding), read from its header alone, so that the memory the run needs can
// be checked before the array is read; nothing when read_input_batch would
// refuse the array (it then names the problem).
struct BatchShape {
  int64_t batch = 0, height = 0, width = 0;
};
std::optional<BatchShape> peek_input_batch(const std::string &path, const ModelConfig &cfg, bool pad);

// Pads (batch, channels, h, w) images given as one array to the next valid
// size when `pad` is set, else checks them; `context` names the source and
// `remedy` says how the command could fit another size (check_input_size).
InputBatch fit_input_batch(io::NpyArray x, const ModelConfig &cfg, bool pad, const std::string &context,
                           const std::string &remedy);

} // namespace pola::app
