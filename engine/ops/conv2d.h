// A 2-D convolution over token rows as a oneDNN primitive created once per
// plan: the polarity block's depthwise local branch (groups = channels),
// which may add its result to what dst holds, and PolaFormer++'s dense stem
// and downsampling convs. Input and output are NHWC, i.e. token rows. (Patch embedding and spatial reduction, whose kernel equals
// their stride, are patchify + matmul instead: engine/ops/patchify.h.)
// Weights are reordered once into the layout the primitive prefers.
// In bf16 precision the source rows and the packed weights are bf16, the
// products accumulate in fp32, and bias (and any sum) apply to the fp32
// result, which dst holds: as ops::Linear.
#pragma once

#include <cstdint>
#include <dnnl.hpp>
#include <unordered_map>

#include "engine/packed_weights.h"
#include "engine/precision.h"

namespace pola::ops {

struct Conv2dShape {
  int64_t batch = 1, in_ch = 0, in_h = 0, in_w = 0;
  int64_t out_ch = 0, kernel = 1, stride = 1, pad = 0, groups = 1;
  bool accumulate = false; // add the result to what dst holds
  Precision precision = Precision::fp32; // of the source rows, the weights and the products
};

class Conv2d {
 public:
  // weight: (out_ch, in_ch/groups, k, k), float, or bf16 values when
  // weight_stored_bf16 (a BF16 model file); bias: (out_ch).
  Conv2d(const Conv2dShape &s, const void *weight, bool weight_stored_bf16, const float *bias,
         PackedWeightCache &cache);
  Conv2d(const Conv2dShape &s, const float *weight, const float *bias, PackedWeightCache &cache)
      : Conv2d(s, weight, false, bias, cache) {}
  // Not thread-safe: a plan (and its ops) serves one call at a time.
  // src holds float or bf16 rows as the precision says; dst is float.
  void run(dnnl::stream &stream, const void *src, float *dst);

 private:
  dnnl::memory weights_, bias_, src_, dst_;
  std::unordered_map<int, dnnl::memory> args_;
  dnnl::convolution_forward prim_;
};

} // namespace pola::ops
