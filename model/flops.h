// Analytic cost of one image through a model: multiply-accumulates of every
// linear layer, convolution and attention product (FLOPs = 2 x MACs, the
// convention of the paper's profiler). Element-wise work is not counted.
// Each family counts its own layout (FamilyRules::macs in
// model/<family>_family.cpp); tests/model/check_macs.py checks every family
// against an independent count on the PyTorch reference.
#pragma once

#include <cstdint>

#include "model/model_config.h"

namespace pola {

int64_t macs_per_image(const ModelConfig &cfg);
// The same at an input of height x width (windows count their padding).
int64_t macs_per_image(const ModelConfig &cfg, int64_t height, int64_t width);

} // namespace pola
