// Tables of Swin's softmax windows that the checkpoints store as buffers but
// that follow from the geometry alone, so the engine recomputes them.
#pragma once

#include <cstdint>
#include <vector>

namespace pola::models {

// bias[h][i][j] = table[idx(i, j)][h] for a window_h x window_w window (t =
// window_h * window_w tokens), with idx = (dy + W - 1) * (2W - 1) + (dx + W - 1),
// W = table_window (the table holds (2W - 1)^2 offsets) and (dy, dx) = position
// of query i minus position of key j inside the window. Needs window_h,
// window_w <= table_window: a smaller window reads the offsets it has.
std::vector<float> expand_relative_bias(const float *table, int64_t table_window, int64_t window_h,
                                        int64_t window_w, int64_t heads);

// Shifted-window mask of one (padded) height x width image, windows of
// window x window tokens (t each, t x t per window): 0 between tokens of the
// same region of the 3 x 3 split of the rolled image, -100 otherwise.
std::vector<float> shifted_window_mask(int64_t height, int64_t width, int64_t window, int64_t shift);

} // namespace pola::models
