// Small row-wise operations on token tensors.
#pragma once

#include <cstdint>
#include <vector>

namespace pola::ops {

// x[b, n, :] += add[n, :] for every image b (absolute position embeddings).
void add_broadcast_rows(float *x, const float *add, int64_t batch, int64_t tokens, int64_t channels,
                        int threads);

// A planar image batch (batch, channels, height, width) as token rows
// (batch * height * width, channels): the layout convolutions over rows take.
void image_to_rows(const float *src, float *dst, int64_t batch, int64_t channels, int64_t pixels, int threads);

// dst[b, :] = mean over n of src[b, n, :].
void mean_over_tokens(const float *src, float *dst, int64_t batch, int64_t tokens, int64_t channels);

// 1-D linear interpolation along the token axis from n_in to n_out tokens per
// image (PyTorch F.interpolate(mode='linear', align_corners=False)).
void interpolate_tokens(const float *src, float *dst, int64_t batch, int64_t n_in, int64_t n_out,
                        int64_t channels, int threads);

// A (in_h x in_w, channels) token grid (row-major tokens) resized bilinearly
// to out_h x out_w (PyTorch F.interpolate(mode='bilinear', align_corners=False)
// on the grid viewed as a channels-plane image): learned position tables at
// another input size.
std::vector<float> resize_token_grid(const float *src, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w,
                                     int64_t channels);

} // namespace pola::ops
