// torchvision ToTensor + Normalize on an 8-bit image: planar CHW float32,
//   out[c][y][x] = (float(p) / 255 - mean[c]) / std[c]
// evaluated in float32 in that order (as torch does), so results are
// bit-identical to the reference pipeline, not merely close.
#pragma once

#include <vector>

#include "engine/preprocess/image_u8.h"

namespace pola::preprocess {

// mean and std need one entry per channel; throws std::invalid_argument otherwise.
std::vector<float> normalize(const ImageU8 &img, const std::vector<float> &mean, const std::vector<float> &std);

} // namespace pola::preprocess
