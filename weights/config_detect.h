// Recovers a ModelConfig from a checkpoint's tensor names and shapes alone
// (SPEC section 6): every family in the table (model/family.cpp) is asked
// whether the names are its own, and the one that claims them reads its
// config from the shapes (model/<family>_detect.cpp).
#pragma once

#include <string>

#include "model/model_config.h"
#include "model/shape_reader.h"

namespace pola::weights {

// name -> shape of every tensor in the checkpoint (model/shape_reader.h).
using ShapeMap = pola::ShapeMap;

// Throws InputError(context + ": ...") when the tensors are not a PolaFormer
// state dict or a needed tensor is missing / oddly shaped. The result still
// has to be checked against expected_tensors() (the converter does).
ModelConfig detect_config(const ShapeMap &shapes, const std::string &context);

} // namespace pola::weights
