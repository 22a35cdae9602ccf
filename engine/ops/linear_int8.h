// y = x W^T + b for a layer the model file holds in int8 (`pola quantize`),
// as a oneDNN int8 matmul created once per plan: int8 source rows (quantized
// with the layer's static per-tensor scale s_in, kernels' Op::quantize) times
// int8 weights (one scale s_w[o] per output channel), summed exactly in int32,
// then y[r, o] = s_in * s_w[o] * sum + b[o] in fp32 (output scales), plus the
// residual in dst with accumulate. oneDNN picks AMX-INT8 or VNNI code by itself;
// the POLA_ISA cap reaches it through engine/dnnl_context.
#pragma once

#include <cstdint>
#include <dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "engine/ops/linear.h"
#include "engine/packed_weights.h"

namespace pola::ops {

struct QuantizedLinearParams {
  const int8_t *weight = nullptr;       // (out, in) row-major, PyTorch layout
  const float *weight_scale = nullptr;  // (out)
  float input_scale = 0;                // s_in, > 0
  const float *bias = nullptr;          // (out) or null
  int64_t in = 0, out = 0;
};

class QuantizedLinear {
 public:
  // shape.dst_bf16 must be false: the result is fp32.
  QuantizedLinear(const QuantizedLinearParams &p, const LinearShape &shape, PackedWeightCache &cache);
  // Not thread-safe (one call per plan at a time). src: int8 rows; dst: float rows.
  void run(dnnl::stream &stream, const int8_t *src, float *dst);

 private:
  LinearShape s_;
  std::vector<float> bias_; // in the form the primitive adds it (see the constructor)
  dnnl::memory weights_, bias_mem_, src_, dst_;
  std::unordered_map<int, dnnl::memory> args_;
  dnnl::matmul prim_;
};

} // namespace pola::ops
