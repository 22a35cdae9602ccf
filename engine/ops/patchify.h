// Non-overlapping patches (a convolution whose kernel equals its stride, as in
// every patch embedding and PVT's spatial reduction) as rows for a GEMM:
// row (b, y, x) holds the patch's values in the order (channel, ky, kx), the
// order of a flattened PyTorch conv weight (out, in, k, k).
#pragma once

#include <cstdint>

namespace pola::ops {

struct PatchGrid {
  int64_t batch = 1, channels = 0, height = 0, width = 0, patch = 1;
  bool nchw = false; // source layout: NCHW image, or NHWC token rows
  int64_t out_h() const { return height / patch; }
  int64_t out_w() const { return width / patch; }
  int64_t row_width() const { return channels * patch * patch; }
};

void patchify(const PatchGrid &g, const float *src, float *dst, int threads);
// The same with bf16 values (uint16_t, the upper half of a float) on either
// side: bf16 rows are copied, float values become bf16 rounded to nearest even
// (what to_bf16 of the float patches gives), bf16 values widen exactly.
void patchify(const PatchGrid &g, const void *src, bool src_bf16, void *dst, bool dst_bf16, int threads);

} // namespace pola::ops
