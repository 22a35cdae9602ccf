// Every tensor a checkpoint of a config holds, named as PyTorch names them
// (SPEC section 6): the converter's checklist and the model file check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace pola {

struct TensorSpec {
  enum class Use { Required, Optional, Dropped };
  std::string name;
  std::vector<int64_t> shape;
  Use use = Use::Required; // Optional: copied when present (PVT norm.*); Dropped: buffer recomputed by the engine
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
