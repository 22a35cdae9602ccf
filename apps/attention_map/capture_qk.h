// Runs a model on one image and keeps one block's projected queries and keys
// (before the positional encoding and scaling), read through the engine's
// NodeObserver from the nodes its family's builder names for them
// (engine/models/qk_taps.h, e.g. PVT <block>.attn.qg = [q | g] and
// <block>.attn.k; Swin <block>.attn.qkg = [q | k | g]).
#pragma once

#include <vector>

#include "block_layout.h"
#include "engine/model.h"

namespace pola::attention_map {

struct CapturedQK {
  std::vector<float> q;  // layout.q_rows x dim
  std::vector<float> k;  // layout.k_rows x dim
};

// `input` is one preprocessed image (model->input_size() floats).
CapturedQK capture_qk(Model &model, const float *input, const BlockLayout &layout);

} // namespace pola::attention_map
