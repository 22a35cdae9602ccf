// 2-D convolution (patch embedding, spatial reduction, the depthwise local
// branch) as a oneDNN primitive created once per plan. Output is always NHWC,
// i.e. token rows; input is NCHW (the user's image) or NHWC (tokens).
// Weights are reordered once into the layout the primitive prefers.
#pragma once

#include <cstdint>
#include <dnnl.hpp>
#include <unordered_map>

#include "engine/packed_weights.h"

namespace pola::ops {

struct Conv2dShape {
  int64_t batch = 1, in_ch = 0, in_h = 0, in_w = 0;
  int64_t out_ch = 0, kernel = 1, stride = 1, pad = 0, groups = 1;
  bool src_nchw = false;
  bool accumulate = false; // add the result to what dst holds
};

class Conv2d {
 public:
  // weight: (out_ch, in_ch/groups, k, k); bias: (out_ch) or null.
  Conv2d(const Conv2dShape &s, const float *weight, const float *bias, PackedWeightCache &cache);
  // Not thread-safe: a plan (and its ops) serves one call at a time.
  void run(dnnl::stream &stream, const float *src, float *dst);
  int64_t out_h() const { return out_h_; }
  int64_t out_w() const { return out_w_; }

 private:
  Conv2dShape s_;
  int64_t out_h_ = 0, out_w_ = 0;
  dnnl::memory weights_, bias_, src_, dst_;
  std::unordered_map<int, dnnl::memory> args_;
  dnnl::convolution_forward prim_;
};

} // namespace pola::ops
