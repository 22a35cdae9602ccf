// Compares the tensors a checkpoint / model file holds with those a config
// implies, and formats one error listing everything missing, extra and
// mis-shaped (the converter and the model file check share it).
#pragma once

#include <string>
#include <vector>

#include "weights/config_detect.h"
#include "model/tensor_list.h"

namespace pola::weights {

struct TensorCheck {
  std::vector<std::string> missing, extra, misshaped;
  bool ok() const { return missing.empty() && extra.empty() && misshaped.empty(); }
  // Multi-line description, at most `max_each` names per list.
  std::string describe(size_t max_each = 20) const;
};

// `checkpoint` true: a checkpoint, where Dropped buffers (relative_position_index,
// attn_mask, num_batches_tracked) may be present and Folded BatchNorm entries
// must be. false: a model file, which holds neither (they are "unexpected").
TensorCheck check_tensors(const ShapeMap &present, const std::vector<TensorSpec> &expected, bool checkpoint);

} // namespace pola::weights
