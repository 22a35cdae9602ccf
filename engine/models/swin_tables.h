// Tables of Swin's softmax windows that the checkpoints store as buffers but
// that follow from the geometry alone, so the engine recomputes them.
#pragma once

#include <cstdint>
#include <vector>

namespace pola::models {

// bias[h][i][j] = table[idx(i, j)][h] with idx = (dy + w - 1) * (2w - 1) + (dx + w - 1),
// (dy, dx) = position of query i minus position of key j inside a w x w window.
std::vector<float> expand_relative_bias(const float *table, int64_t window, int64_t heads);

// Shifted-window mask (windows of one image, t x t each): 0 between tokens of
// the same region of the 3 x 3 split of the rolled image, -100 otherwise.
std::vector<float> shifted_window_mask(int64_t res, int64_t window, int64_t shift);

} // namespace pola::models
