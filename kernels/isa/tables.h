// What each ISA translation unit (compiled with that ISA's flags) exports to
// the registry (registry.cpp). Only addresses cross this boundary: the
// structs are constant-initialised, so reading them runs no code built with
// ISA flags; a function is called only after the registry checked
// cpu_supports() for its ISA.
#pragma once

#include "kernels/registry.h"

namespace pola::kernels::isa {

// The xsimd templates (kernels/simd/) instantiated for one arch.
struct SimdKernels {
  KernelFn<Op::layernorm, DType::f32> layernorm;
  KernelFn<Op::layernorm, DType::bf16> layernorm_bf16;
  KernelFn<Op::gelu, DType::f32> gelu;
  KernelFn<Op::gelu, DType::bf16> gelu_bf16;
  KernelFn<Op::mul_rows, DType::f32> mul_rows;
  KernelFn<Op::to_bf16, DType::bf16> to_bf16;
  KernelFn<Op::quantize, DType::s8> quantize_s8;
  KernelFn<Op::abs_pow, DType::f32> abs_pow;
  KernelFn<Op::polarity_attention, DType::f32> polarity_attention;
  KernelFn<Op::window_attention, DType::f32> window_attention;
  KernelFn<Op::softmax_attention, DType::f32> softmax_attention;
  KernelFn<Op::depthwise_conv, DType::f32> depthwise_conv;
  KernelFn<Op::swish, DType::f32> swish;
  KernelFn<Op::gemm, DType::f32> gemm_f32;
  int64_t gemm_f32_nr; // the panel width gemm_f32 reads (kernels/gemm_f32.h)
};
#if defined(__aarch64__)
extern const SimdKernels kNeon64; // isa/neon64.cpp
#else
extern const SimdKernels kAvx2;   // isa/avx2.cpp
extern const SimdKernels kAvx512; // isa/avx512.cpp

// isa/avx512_bf16.cpp: the bf16 cores on AVX512-BF16 dot products, and the
// shapes they take.
extern const KernelFn<Op::polarity_attention, DType::bf16> kAvx512Bf16PolarityAttention;
extern const KernelFn<Op::window_attention, DType::bf16> kAvx512Bf16WindowAttention;
bool polarity_bf16_fits(const PolarityAttnArgs &shape);
bool window_bf16_fits(const WindowAttnArgs &shape);

// isa/amx_bf16.cpp: the bf16 polarity core and GEMM on AMX tiles, and
// whether Linux grants this process the tile state (asked once).
extern const KernelFn<Op::polarity_attention, DType::bf16> kAmxPolarityAttention;
extern const KernelFn<Op::gemm, DType::bf16> kAmxGemm;
bool amx_tiles_permitted();
#endif

} // namespace pola::kernels::isa
