// The registry (kernels/registry.h): every (op, dtype) has its scalar
// reference and the SIMD entries of the ISAs this machine runs; resolve()
// follows the active ISA, the shape and the bf16 -> fp32 fallback, and says
// what it resolved to; an unknown feature map resolves to nothing and is
// refused by every polarity kernel.
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;

namespace {

PolarityAttnArgs polarity_shape(int head_dim) {
  PolarityAttnArgs a;
  a.heads = 1;
  a.head_dim = head_dim;
  return a;
}

WindowAttnArgs window_shape(int tokens, int head_dim) {
  WindowAttnArgs a;
  a.windows = 1;
  a.tokens = tokens;
  a.heads = 1;
  a.head_dim = head_dim;
  return a;
}

} // namespace

TEST_CASE("registry: every (op, dtype) has a scalar reference") {
  CHECK(bool(lookup<Op::layernorm, DType::f32>(Isa::scalar)));
  CHECK(bool(lookup<Op::layernorm, DType::bf16>(Isa::scalar)));
  CHECK(bool(lookup<Op::gelu, DType::f32>(Isa::scalar)));
  CHECK(bool(lookup<Op::gelu, DType::bf16>(Isa::scalar)));
  CHECK(bool(lookup<Op::mul_rows, DType::f32>(Isa::scalar)));
  CHECK(bool(lookup<Op::to_bf16, DType::bf16>(Isa::scalar)));
  CHECK(bool(lookup<Op::quantize, DType::s8>(Isa::scalar)));
  CHECK(bool(lookup<Op::abs_pow, DType::f32>(Isa::scalar)));
  CHECK(bool(lookup<Op::polarity_attention, DType::f32>(Isa::scalar)));
  CHECK(bool(lookup<Op::polarity_attention, DType::bf16>(Isa::scalar)));
  CHECK(bool(lookup<Op::window_attention, DType::f32>(Isa::scalar)));
  CHECK(bool(lookup<Op::window_attention, DType::bf16>(Isa::scalar)));
  CHECK(bool(lookup<Op::gemm, DType::bf16>(Isa::scalar)));
  CHECK(bool(lookup<Op::gemm, DType::f32>(Isa::scalar)));
  CHECK(bool(lookup<Op::softmax_attention, DType::f32>(Isa::scalar)));
  CHECK(bool(lookup<Op::depthwise_conv, DType::f32>(Isa::scalar)));
  CHECK(bool(lookup<Op::swish, DType::f32>(Isa::scalar)));
}

TEST_CASE("registry: the SIMD entries exist exactly where the CPU runs them") {
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    const bool here = cpu_supports(isa);
    INFO("isa=" << isa_name(isa));
    CHECK(bool(lookup<Op::layernorm, DType::f32>(isa)) == here);
    CHECK(bool(lookup<Op::gelu, DType::bf16>(isa)) == here);
    CHECK(bool(lookup<Op::polarity_attention, DType::f32>(isa)) == here);
    CHECK(bool(lookup<Op::window_attention, DType::f32>(isa)) == here);
    CHECK(bool(lookup<Op::softmax_attention, DType::f32>(isa)) == here);
    CHECK(bool(lookup<Op::depthwise_conv, DType::f32>(isa)) == here);
    CHECK(bool(lookup<Op::swish, DType::f32>(isa)) == here);
    CHECK(bool(lookup<Op::gemm, DType::f32>(isa)) == here);
  }
  CHECK(bool(lookup<Op::polarity_attention, DType::bf16>(Isa::avx512_bf16)) == cpu_supports(Isa::avx512_bf16));
  CHECK(bool(lookup<Op::window_attention, DType::bf16>(Isa::avx512_bf16)) == cpu_supports(Isa::avx512_bf16));
  CHECK(bool(lookup<Op::polarity_attention, DType::bf16>(Isa::amx_bf16)) == cpu_supports(Isa::amx_bf16));
  CHECK(bool(lookup<Op::gemm, DType::bf16>(Isa::amx_bf16)) == cpu_supports(Isa::amx_bf16));
  // No fp32 kernel above avx512, no bf16 attention core on the plain SIMD levels.
  CHECK_FALSE(bool(lookup<Op::layernorm, DType::f32>(Isa::amx_bf16)));
  CHECK_FALSE(bool(lookup<Op::polarity_attention, DType::bf16>(Isa::avx512)));
  if (cpu_supports(Isa::avx512)) CHECK(cpu_supports(Isa::avx2));
  CHECK(std::strcmp(isa_name(Isa::avx512_bf16), "avx512_bf16") == 0);
  Isa parsed;
#if defined(__aarch64__)
  // The POLA_ISA names are the ladder's: aarch64's has no x86 levels.
  CHECK((isa_from_name("neon64", parsed) && parsed == Isa::neon64));
  CHECK_FALSE(isa_from_name("amx_bf16", parsed));
#else
  CHECK((isa_from_name("amx_bf16", parsed) && parsed == Isa::amx_bf16));
#endif
  CHECK_FALSE(isa_from_name("avx512bf16", parsed));
}

TEST_CASE("resolve: the active ISA, and the fp32 kernels on the best level at or below it") {
  const Isa top = active_isa();
  CHECK(cpu_supports(top));
  const auto ln = resolve<Op::layernorm, DType::f32>();
  REQUIRE(bool(ln));
  CHECK(ln.dtype == DType::f32);
  CHECK(ln.isa <= top);
  CHECK((ln.fn == lookup<Op::layernorm, DType::f32>(ln.isa)));
  const auto ln16 = resolve<Op::layernorm, DType::bf16>();
  CHECK(ln16.dtype == DType::bf16); // rounded outputs run on every ISA
  CHECK(ln16.isa == ln.isa);
  // The PolaFormer++ ops: every ISA, every shape.
  CHECK(resolve<Op::softmax_attention, DType::f32>(GlobalAttnArgs{}).isa == ln.isa);
  CHECK(resolve<Op::depthwise_conv, DType::f32>().isa == ln.isa);
  CHECK(resolve<Op::swish, DType::f32>().isa == ln.isa);
  CHECK((resolve<Op::swish, DType::f32>().fn == lookup<Op::swish, DType::f32>(ln.isa)));
  // The own fp32 GEMM: every ISA; its panel width is two of that ISA's vectors (any for scalar).
  const auto gemm = resolve<Op::gemm, DType::f32>();
  CHECK(gemm.isa == ln.isa);
  CHECK(gemm_f32_panel_width(gemm.isa) > 0);
#if defined(__aarch64__)
  CHECK(gemm_f32_panel_width(Isa::neon64) > 0); // the x86 levels have no table here
#else
  CHECK(gemm_f32_panel_width(Isa::avx2) == 16);
  CHECK(gemm_f32_panel_width(Isa::avx512) == 32);
#endif
  CHECK(gemm_f32_panel_width(Isa::amx_bf16) == 0);
}

TEST_CASE("resolve: bf16 attention runs bf16 only on bf16 instructions and fitting shapes, else fp32") {
  const Isa top = active_isa();
  const auto pola = resolve<Op::polarity_attention, DType::bf16>(polarity_shape(64));
  REQUIRE(bool(pola));
#if defined(__aarch64__)
  // Levels compare only within one ladder; aarch64 has no bf16 attention core yet.
  if (false) {
#else
  if (top >= Isa::avx512_bf16) {
#endif
    CHECK(pola.dtype == DType::bf16);
    CHECK(pola.isa == top);
  } else {
    CHECK(pola.dtype == DType::f32); // never the scalar bf16 oracle
    CHECK((pola.fn == resolve<Op::polarity_attention, DType::f32>(polarity_shape(64)).fn));
  }
  // Heads wider than the bf16 core's 128 channels: the fp32 core, reported fp32.
  const auto wide = resolve<Op::polarity_attention, DType::bf16>(polarity_shape(160));
  CHECK(wide.dtype == DType::f32);
  CHECK((wide.fn == resolve<Op::polarity_attention, DType::f32>(polarity_shape(160)).fn));
  // The runtime-dtype form agrees.
  CHECK((resolve<Op::polarity_attention>(DType::bf16, polarity_shape(64)).fn == pola.fn));

  // Window attention in bf16: AVX512-BF16 dot products only (fp32 where AMX is active).
  const auto win = resolve<Op::window_attention, DType::bf16>(window_shape(49, 32));
  REQUIRE(bool(win));
  CHECK((win.dtype == DType::bf16) == (top == Isa::avx512_bf16));
  CHECK(resolve<Op::window_attention, DType::bf16>(window_shape(49, 40)).dtype == DType::f32);
  CHECK(resolve<Op::window_attention, DType::bf16>(window_shape(300, 32)).dtype == DType::f32);
#if !defined(__aarch64__) // the shape limits of the AVX512-BF16 window core, an x86 kernel
  CHECK(fits<Op::window_attention, DType::bf16>(Isa::avx512_bf16, window_shape(256, 64)));
  CHECK_FALSE(fits<Op::window_attention, DType::bf16>(Isa::avx512_bf16, window_shape(257, 64)));
#endif

  // The bf16 GEMM: AMX or nothing (the engine then uses oneDNN).
  CHECK(bool(resolve<Op::gemm, DType::bf16>(Bf16GemmArgs{})) == (top == Isa::amx_bf16));
}

TEST_CASE("an unknown feature map resolves to no kernel and every polarity kernel refuses it") {
  PolarityAttnArgs a = polarity_shape(16);
  a.feature.kind = static_cast<FeatureKind>(7);
  CHECK_FALSE(bool(resolve<Op::polarity_attention, DType::f32>(a)));
  CHECK_FALSE(bool(resolve<Op::polarity_attention, DType::bf16>(a)));
  // Refused before any pointer is read: a problem without data is enough.
  a.n_q = a.n_k = 1;
  for (Isa isa : kIsaLadder) {
    INFO("isa=" << isa_name(isa));
    if (auto fn = lookup<Op::polarity_attention, DType::f32>(isa)) CHECK_THROWS_AS(fn(a), std::invalid_argument);
    if (auto fn = lookup<Op::polarity_attention, DType::bf16>(isa)) CHECK_THROWS_AS(fn(a), std::invalid_argument);
  }
}

TEST_CASE("the bf16 cores refuse shapes their fits() rejects") {
  const PolarityAttnArgs wide = polarity_shape(160);
  for (Isa isa : {Isa::avx512_bf16, Isa::amx_bf16})
    if (auto fn = lookup<Op::polarity_attention, DType::bf16>(isa)) {
      INFO("isa=" << isa_name(isa));
      CHECK_FALSE(fits<Op::polarity_attention, DType::bf16>(isa, wide));
      CHECK_THROWS_AS(fn(wide), std::invalid_argument);
    }
  if (auto fn = lookup<Op::window_attention, DType::bf16>(Isa::avx512_bf16))
    CHECK_THROWS_AS(fn(window_shape(49, 40)), std::invalid_argument);
}

TEST_CASE("exp_sigmoid stays fp32: a bf16 request resolves to the fp32 core and every bf16 kernel refuses it") {
  PolarityAttnArgs a = polarity_shape(32);
  a.feature.kind = FeatureKind::exp_sigmoid;
  const auto r = resolve<Op::polarity_attention, DType::bf16>(a);
  REQUIRE(bool(r));
  CHECK(r.dtype == DType::f32);
  CHECK((r.fn == resolve<Op::polarity_attention, DType::f32>(a).fn));
  CHECK(resolve<Op::polarity_attention>(DType::bf16, a).dtype == DType::f32);
  // Refused before any pointer is read.
  a.n_q = a.n_k = 1;
  for (Isa isa : kIsaLadder) {
    INFO("isa=" << isa_name(isa));
    CHECK_FALSE(fits<Op::polarity_attention, DType::bf16>(isa, a));
    if (auto fn = lookup<Op::polarity_attention, DType::bf16>(isa)) CHECK_THROWS_AS(fn(a), std::invalid_argument);
  }
}
