// Recovers a ModelConfig from a checkpoint's tensor names and shapes alone
// (SPEC section 6): the family from the key layout, depths from block indices,
// heads from attn.power (1,h,1,d), MLP ratios from fc1, the input size from
// positional-encoding rows, attention types from qkvg vs qkv, windows from
// relative-position tables and positional encodings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace pola::weights {

// name -> shape of every tensor in the checkpoint.
using ShapeMap = std::map<std::string, std::vector<int64_t>>;

// Throws InputError(context + ": ...") when the tensors are not a PolaFormer
// state dict or a needed tensor is missing / oddly shaped. The result still
// has to be checked against expected_tensors() (the converter does).
ModelConfig detect_config(const ShapeMap &shapes, const std::string &context);

} // namespace pola::weights
