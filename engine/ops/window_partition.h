// Swin's cyclic shift + window partition, and its inverse, as row gathers
// over token rows (B, H, W, C): window-major order, row-major inside a window.
// torch.roll(x, shifts=(-s, -s)) semantics: rolled[y][x] = x[(y+s)%H][(x+s)%W].
#pragma once

#include <cstdint>

namespace pola::ops {

struct WindowGrid {
  int64_t batch = 1, height = 0, width = 0, channels = 0;
  int64_t window = 0, shift = 0;
};

// dst[window token] = src[rolled position]; dst is dense (rows x channels).
void window_partition(const WindowGrid &g, const float *src, float *dst, int threads);

// dst[rolled position] += src[window token]: reverses the partition and the
// shift while adding the residual.
void window_reverse_add(const WindowGrid &g, const float *src, float *dst, int threads);

} // namespace pola::ops
