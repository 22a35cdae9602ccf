// The SimdKernels of one xsimd arch: included only by kernels/isa/*.cpp.
#pragma once

#include "kernels/isa/tables.h"
#include "kernels/simd/abs_pow_map.hpp"
#include "kernels/simd/depthwise_conv.hpp"
#include "kernels/simd/gelu.hpp"
#include "kernels/simd/gemm_f32.hpp"
#include "kernels/simd/layernorm.hpp"
#include "kernels/simd/mul_rows.hpp"
#include "kernels/simd/pola_attention.hpp"
#include "kernels/simd/quantize_s8.hpp"
#include "kernels/simd/softmax_attention.hpp"
#include "kernels/simd/swish.hpp"
#include "kernels/simd/to_bf16.hpp"
#include "kernels/simd/window_attention.hpp"

namespace pola::kernels::simd {

template <class A> constexpr isa::SimdKernels make_kernels() {
  return isa::SimdKernels{&layernorm<A>, &layernorm_bf16<A>, &gelu<A>,
                          &gelu_bf16<A>, &mul_rows<A>,       &to_bf16<A>, &quantize_s8<A>,
                          &abs_pow_map<A>, &polarity_attention<A>, &window_attention<A>,
                          &softmax_attention<A>, &depthwise_conv<A>, &swish<A>,
                          &gemm_f32<A>, gemm_f32_nr<A>()};
}

} // namespace pola::kernels::simd
