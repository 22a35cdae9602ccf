// y = x W^T + b on token rows, as a oneDNN matmul created once per plan.
// Post-ops fuse the exact GELU (fc1) and the residual add (accumulate: the
// result is added to what `dst` already holds).
#pragma once

#include <cstdint>
#include <dnnl.hpp>

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
  Linear(const LinearParams &p, const LinearShape &s);
  void run(dnnl::stream &stream, const float *src, float *dst) const;

 private:
  LinearParams p_;
  LinearShape s_;
  dnnl::memory::desc src_md_, wei_md_, bias_md_, dst_md_;
  dnnl::matmul prim_;
};

} // namespace pola::ops
