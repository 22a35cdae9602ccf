// y = x W^T + b on token rows, as a oneDNN matmul created once per plan.
// A sum post-op fuses the residual add (accumulate: the result is added to
// what `dst` already holds); GELU is the engine's own kernel, run by the
// node after the GEMM. Weights are taken in the layout the primitive
// prefers, packed once per model.
// In bf16 precision the source rows and the packed weights are bf16, the
// products accumulate in fp32 and bias and the residual add are applied
// to the fp32 result; dst is fp32 unless dst_bf16 (a GEMM reads it next).
// Where AMX-BF16 is active, the shapes own_bf16_gemm_wins() names run on the
// engine's own AMX GEMM (kernels/gemm_bf16.h) instead of oneDNN, with the same
// post-ops; the thread count is the OpenMP team size when the op is built, as
// for oneDNN's primitives. Where the GEMM provider (gemm_provider.h) says
// own_f32, fp32 layers run on the engine's own fp32 GEMM (kernels/gemm_f32.h),
// same post-ops, weights packed once into its panels.
#pragma once

#include <cstdint>
#include <dnnl.hpp>
#include <unordered_map>

#include "engine/ops/gemm_provider.h"
#include "engine/packed_weights.h"
#include "engine/precision.h"
#include "kernels/registry.h"

namespace pola::ops {

struct LinearParams {
  const void *weight = nullptr;    // (out, in) row-major, PyTorch layout
  bool weight_stored_bf16 = false; // weight holds bf16 values (a BF16 model file), else float
  const float *bias = nullptr;     // (out) or null
  int64_t in = 0, out = 0;
  Precision precision = Precision::fp32; // of the source rows, the weights and the products
};

struct LinearShape {
  int64_t rows = 0;
  int64_t ld_src = 0, ld_dst = 0; // row strides in elements (0 = dense)
  bool accumulate = false;
  bool dst_bf16 = false; // bf16 precision only: write bf16 rows
};

class Linear {
 public:
  Linear(const LinearParams &p, const LinearShape &s, PackedWeightCache &cache);
  // Not thread-safe: a plan (and its ops) serves one call at a time.
  // src holds float or bf16 rows as the precision says; dst float unless dst_bf16.
  void run(dnnl::stream &stream, const void *src, void *dst);

 private:
  LinearParams p_;
  LinearShape s_;
  dnnl::memory weights_, bias_, src_, dst_;
  std::unordered_map<int, dnnl::memory> args_;
  dnnl::matmul prim_;
  kernels::KernelFn<kernels::Op::gemm, DType::bf16> own_ = nullptr; // set: the AMX GEMM runs instead of prim_
  kernels::Bf16GemmArgs own_args_;
  kernels::KernelFn<kernels::Op::gemm, DType::f32> own_f32_ = nullptr; // set: the own fp32 GEMM runs instead
  kernels::F32GemmArgs own_f32_args_;
};

} // namespace pola::ops
