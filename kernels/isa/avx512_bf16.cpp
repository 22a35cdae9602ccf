// AVX512-BF16 instantiations of the bf16 polarity core
// (kernels/simd/pola_attention_bf16.hpp) and of the bf16 window attention
// (window_attention_bf16.hpp), with the dot-product policy of
// pola_bf16_products.hpp: the CPUs with vdpbf16ps but no AMX (AMD Zen 4/5,
// or an AMX CPU capped by POLA_ISA=avx512_bf16). Built with the avx512
// table's flags, like amx_bf16.cpp; called only when dispatch.cpp found
// AVX512-BF16 active.
#include "kernels/isa/tables.h"
#include "kernels/simd/pola_attention_bf16.hpp"
#include "kernels/simd/window_attention_bf16.hpp"

namespace pola::kernels::isa {

namespace {

void pola_attention_dot(const PolaAttnArgs &a) {
  if (a.head_dim > simd::bf16_detail::kMaxHeadDim) return avx512_table().pola_attention(a); // see kMaxHeadDim
  simd::bf16_detail::pola_attention_bf16<simd::bf16_detail::DotProducts>(a);
}

void window_attention_dot(const WindowAttnArgs &a) {
  if (!simd::bf16_detail::window_bf16_fits(a)) return avx512_table().window_attention(a);
  simd::bf16_detail::window_attention_bf16<simd::bf16_detail::DotProducts>(a);
}

} // namespace

PolaAttnFn avx512_bf16_pola_attention() { return &pola_attention_dot; }
WindowAttnFn avx512_bf16_window_attention() { return &window_attention_dot; }

} // namespace pola::kernels::isa
