// AVX512-BF16 instantiations of the bf16 polarity core
// (kernels/simd/pola_attention_bf16.hpp) and of the bf16 window attention
// (window_attention_bf16.hpp), with the dot-product policy of
// pola_bf16_products.hpp: the CPUs with vdpbf16ps but no AMX (AMD Zen 4/5,
// or an AMX CPU capped by POLA_ISA=avx512_bf16). Built with the avx512
// flags, like amx_bf16.cpp; the kernels run only where the registry found
// AVX512-BF16, and only on shapes their fits() take (they refuse others).
#include "kernels/isa/tables.h"
#include "kernels/simd/pola_attention_bf16.hpp"
#include "kernels/simd/window_attention_bf16.hpp"

namespace pola::kernels::isa {

constexpr KernelFn<Op::polarity_attention, DType::bf16> kAvx512Bf16PolarityAttention =
    &simd::bf16_detail::polarity_attention_bf16<simd::bf16_detail::DotProducts>;
constexpr KernelFn<Op::window_attention, DType::bf16> kAvx512Bf16WindowAttention =
    &simd::bf16_detail::window_attention_bf16<simd::bf16_detail::DotProducts>;

bool polarity_bf16_fits(const PolarityAttnArgs &shape) { return simd::bf16_detail::polarity_bf16_fits(shape); }
bool window_bf16_fits(const WindowAttnArgs &shape) { return simd::bf16_detail::window_bf16_fits(shape); }

} // namespace pola::kernels::isa
