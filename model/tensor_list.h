// Every tensor a checkpoint of a config holds, named as PyTorch names them
// (SPEC section 6): the converter's checklist and the model file check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace pola {

struct TensorSpec {
  // Required / Optional (copied when present, PVT norm.*): in checkpoints and
  // model files alike. Dropped: a buffer the engine recomputes (or a step
  // counter), allowed in checkpoints, never written. Folded: an eval-mode
  // BatchNorm entry a checkpoint must hold; the converter folds it into the
  // convolution `fold_into` (weights/batchnorm_fold.h) and a model file holds
  // only that convolution.
  enum class Use { Required, Optional, Dropped, Folded };
  std::string name;
  std::vector<int64_t> shape;
  Use use = Use::Required;
  std::string fold_into; // Folded: the prefix of the conv ("patch_embed.proj.0") whose .weight/.bias absorb it
  // A per-channel kernel (groups == channels, shape (C, 1, k, k)): kept F32 at
  // every weight dtype. Said here, not guessed from the shape, because a dense
  // conv on a 1-channel input has the same shape.
  bool depthwise = false;
};

// Every tensor a checkpoint of config `c` holds, in model order. Checks the
// config first (check_config, context "config").
std::vector<TensorSpec> expected_tensors(const ModelConfig &c);

// The key prefix of block `index` of stage `stage` (both counted from 0), e.g.
// "block2.0" (PVT) or "layers.1.blocks.0" (Swin). The engine's builders name a
// block's graph nodes with the same prefix.
std::string block_name(const ModelConfig &c, size_t stage, size_t index);

// "(2, 3, 5)" for messages.
std::string shape_string(const std::vector<int64_t> &shape);

} // namespace pola
