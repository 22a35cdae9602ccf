// y = x W^T + b on token rows, as a oneDNN matmul created once per plan.
// Post-ops fuse the exact GELU (fc1) and the residual add (accumulate: the
// result is added to what `dst` already holds). Weights are taken in the
// layout the primitive prefers, packed once per model.
#pragma once

#include <cstdint>
#include <dnnl.hpp>
#include <unordered_map>

#include "engine/packed_weights.h"

namespace pola::ops {

struct LinearParams {
  const float *weight = nullptr; // (out, in) row-major, PyTorch layout
  const float *bias = nullptr;   // (out) or null
  int64_t in = 0, out = 0;
};

struct LinearShape {
  int64_t rows = 0;
  int64_t ld_src = 0, ld_dst = 0; // row strides (0 = dense)
  bool gelu = false;
  bool accumulate = false;
};

class Linear {
 public:
  Linear(const LinearParams &p, const LinearShape &s, PackedWeightCache &cache);
  // Not thread-safe: a plan (and its ops) serves one call at a time.
  void run(dnnl::stream &stream, const float *src, float *dst);

 private:
  LinearParams p_;
  LinearShape s_;
  dnnl::memory weights_, bias_, src_, dst_;
  std::unordered_map<int, dnnl::memory> args_;
  dnnl::matmul prim_;
};

} // namespace pola::ops
