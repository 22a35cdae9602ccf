// Swin's cyclic shift + window partition, and its inverse, as row gathers
// over token rows (B, H, W, C): window-major order, row-major inside a window.
// torch.roll(x, shifts=(-s, -s)) semantics: rolled[y][x] = x[(y+s)%H][(x+s)%W].
// A grid that is no multiple of the window is first padded at the bottom and
// right with zero tokens to padded_height x padded_width (Swin's detection
// backbone), then rolled; the padding is dropped again on the way back.
#pragma once

#include <cstdint>

namespace pola::ops {

struct WindowGrid {
  int64_t batch = 1, height = 0, width = 0, channels = 0;
  int64_t window = 0, shift = 0;
  int64_t padded_height = 0, padded_width = 0;  // 0 = no padding
  int64_t padded_h() const { return padded_height > 0 ? padded_height : height; }
  int64_t padded_w() const { return padded_width > 0 ? padded_width : width; }
  int64_t window_rows() const { return batch * padded_h() * padded_w(); }  // rows of the partitioned tensor
};

// dst[window token] = src[rolled position] (zeros for padding); dst is dense
// (window_rows() x channels).
void window_partition(const WindowGrid &g, const float *src, float *dst, int threads);
// The same over bf16 rows (2-byte values; zero bytes are 0.0 there too).
void window_partition(const WindowGrid &g, const uint16_t *src, uint16_t *dst, int threads);

// dst[rolled position] += src[window token]: reverses the partition and the
// shift while adding the residual; padding tokens are dropped.
void window_reverse_add(const WindowGrid &g, const float *src, float *dst, int threads);

} // namespace pola::ops
