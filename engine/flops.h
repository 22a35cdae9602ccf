// Analytic cost of one image through a model: multiply-accumulates of every
// linear layer, convolution and attention product (FLOPs = 2 x MACs, the
// convention of the paper's profiler). Element-wise work is not counted.
#pragma once

#include <cstdint>

#include "model/model_config.h"

namespace pola {

int64_t macs_per_image(const ModelConfig &cfg);
// The same at an input of height x width (Swin windows count their padding).
int64_t macs_per_image(const ModelConfig &cfg, int64_t height, int64_t width);

} // namespace pola
