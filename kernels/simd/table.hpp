// The KernelTable of one xsimd arch: included only by kernels/isa/*.cpp.
#pragma once

#include "kernels/kernels.h"
#include "kernels/simd/abs_pow_map.hpp"
#include "kernels/simd/gelu.hpp"
#include "kernels/simd/layernorm.hpp"
#include "kernels/simd/mul_rows.hpp"
#include "kernels/simd/pola_attention.hpp"
#include "kernels/simd/to_bf16.hpp"
#include "kernels/simd/window_attention.hpp"

namespace pola::kernels::simd {

template <class A> KernelTable make_table(Isa isa) {
  return KernelTable{isa, &layernorm<A>, &gelu<A>, &mul_rows<A>, &pola_attention<A>,
                     &window_attention<A>, &to_bf16<A>, &layernorm_bf16<A>, &gelu_bf16<A>,
                     &abs_pow_map<A>};
}

} // namespace pola::kernels::simd
