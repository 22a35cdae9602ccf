// Swin patch merging's gather: (B, H, W, C) -> (B, H/2, W/2, 4C) with the
// quadrants concatenated as x[0::2,0::2], x[1::2,0::2], x[0::2,1::2],
// x[1::2,1::2] (first index is the row) — the order the checkpoints expect.
#pragma once

#include <cstdint>

namespace pola::ops {

void patch_merge_gather(const float *src, float *dst, int64_t batch, int64_t height, int64_t width,
                        int64_t channels, int threads);

} // namespace pola::ops
