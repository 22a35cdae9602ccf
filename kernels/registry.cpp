// Every registered kernel, one list per (op, dtype), highest ISA first (the
// order resolve() tries them in). A kernel added here is found by resolve(),
// lookup() and the per-ISA tests; nothing else needs to know it.
#include "kernels/registry.h"

#include <cstddef>

#include "kernels/isa/tables.h"
#include "kernels/reference/reference.h"

namespace pola::kernels {

const char *op_name(Op op) {
  switch (op) {
  case Op::layernorm: return "layernorm";
  case Op::gelu: return "gelu";
  case Op::mul_rows: return "mul_rows";
  case Op::to_bf16: return "to_bf16";
  case Op::quantize: return "quantize";
  case Op::abs_pow: return "abs_pow";
  case Op::polarity_attention: return "polarity_attention";
  case Op::window_attention: return "window_attention";
  case Op::gemm: return "gemm";
  case Op::softmax_attention: return "softmax_attention";
  case Op::depthwise_conv: return "depthwise_conv";
  case Op::swish: return "swish";
  }
  return "unknown";
}


namespace {

template <Op op, DType dt, std::size_t n> EntryList<op, dt> list(const Entry<op, dt> (&e)[n]) { return {e, e + n}; }

// The fp32 polarity kernels run every shape of a known feature map whose
// RoPE table (exp_sigmoid only) fits it.
bool fp32_fits(const PolarityAttnArgs &a) { return known_feature_map(a.feature) && rope_fits(a); }
// The bf16 oracle, like the bf16 cores, takes only the maps that stay bf16.
bool bf16_map(const PolarityAttnArgs &a) { return bf16_feature_map(a.feature); }

} // namespace

// One entry per xsimd arch and the reference, for the ops every ISA has.
#if defined(__aarch64__)
#define POLA_SIMD_ENTRIES(field, reference_fn) {Isa::neon64, isa::kNeon64.field}, { Isa::scalar, &reference::reference_fn }
#else
#define POLA_SIMD_ENTRIES(field, reference_fn)                                                                        \
  {Isa::avx512, isa::kAvx512.field}, {Isa::avx2, isa::kAvx2.field}, { Isa::scalar, &reference::reference_fn }
#endif

template <> EntryList<Op::layernorm, DType::f32> entries() {
  static const Entry<Op::layernorm, DType::f32> e[] = {POLA_SIMD_ENTRIES(layernorm, layernorm)};
  return list(e);
}
template <> EntryList<Op::layernorm, DType::bf16> entries() {
  static const Entry<Op::layernorm, DType::bf16> e[] = {POLA_SIMD_ENTRIES(layernorm_bf16, layernorm_bf16)};
  return list(e);
}
template <> EntryList<Op::gelu, DType::f32> entries() {
  static const Entry<Op::gelu, DType::f32> e[] = {POLA_SIMD_ENTRIES(gelu, gelu)};
  return list(e);
}
template <> EntryList<Op::gelu, DType::bf16> entries() {
  static const Entry<Op::gelu, DType::bf16> e[] = {POLA_SIMD_ENTRIES(gelu_bf16, gelu_bf16)};
  return list(e);
}
template <> EntryList<Op::mul_rows, DType::f32> entries() {
  static const Entry<Op::mul_rows, DType::f32> e[] = {POLA_SIMD_ENTRIES(mul_rows, mul_rows)};
  return list(e);
}
template <> EntryList<Op::to_bf16, DType::bf16> entries() {
  static const Entry<Op::to_bf16, DType::bf16> e[] = {POLA_SIMD_ENTRIES(to_bf16, to_bf16)};
  return list(e);
}
template <> EntryList<Op::quantize, DType::s8> entries() {
  static const Entry<Op::quantize, DType::s8> e[] = {POLA_SIMD_ENTRIES(quantize_s8, quantize_s8)};
  return list(e);
}
template <> EntryList<Op::abs_pow, DType::f32> entries() {
  static const Entry<Op::abs_pow, DType::f32> e[] = {POLA_SIMD_ENTRIES(abs_pow, abs_pow)};
  return list(e);
}
template <> EntryList<Op::softmax_attention, DType::f32> entries() {
  static const Entry<Op::softmax_attention, DType::f32> e[] = {POLA_SIMD_ENTRIES(softmax_attention, softmax_attention)};
  return list(e);
}
template <> EntryList<Op::depthwise_conv, DType::f32> entries() {
  static const Entry<Op::depthwise_conv, DType::f32> e[] = {POLA_SIMD_ENTRIES(depthwise_conv, depthwise_conv)};
  return list(e);
}
template <> EntryList<Op::swish, DType::f32> entries() {
  static const Entry<Op::swish, DType::f32> e[] = {POLA_SIMD_ENTRIES(swish, swish)};
  return list(e);
}
template <> EntryList<Op::gemm, DType::f32> entries() {
  static const Entry<Op::gemm, DType::f32> e[] = {POLA_SIMD_ENTRIES(gemm_f32, gemm_f32)};
  return list(e);
}

#undef POLA_SIMD_ENTRIES

template <> EntryList<Op::polarity_attention, DType::f32> entries() {
  static const Entry<Op::polarity_attention, DType::f32> e[] = {
#if defined(__aarch64__)
      {Isa::neon64, isa::kNeon64.polarity_attention, &fp32_fits},
#else
      {Isa::avx512, isa::kAvx512.polarity_attention, &fp32_fits},
      {Isa::avx2, isa::kAvx2.polarity_attention, &fp32_fits},
#endif
      {Isa::scalar, &reference::polarity_attention, &fp32_fits}};
  return list(e);
}

// Heads over 128 channels, exp_sigmoid or an unknown map: the fp32 core (falls_back_to_fp32).
template <> EntryList<Op::polarity_attention, DType::bf16> entries() {
  static const Entry<Op::polarity_attention, DType::bf16> e[] = {
#if !defined(__aarch64__)
      {Isa::amx_bf16, isa::kAmxPolarityAttention, &isa::polarity_bf16_fits},
      {Isa::avx512_bf16, isa::kAvx512Bf16PolarityAttention, &isa::polarity_bf16_fits},
#endif
      {Isa::scalar, &reference::polarity_attention_bf16, &bf16_map, Isa::amx_bf16, /*oracle_only=*/true}};
  return list(e);
}

template <> EntryList<Op::window_attention, DType::f32> entries() {
  static const Entry<Op::window_attention, DType::f32> e[] = {
#if defined(__aarch64__)
      {Isa::neon64, isa::kNeon64.window_attention},
#else
      {Isa::avx512, isa::kAvx512.window_attention},
      {Isa::avx2, isa::kAvx2.window_attention},
#endif
      {Isa::scalar, &reference::window_attention}};
  return list(e);
}

// Only up to avx512_bf16: where AMX is active the fp32 kernel runs. There is
// no tile version, and on the AMX CPUs measured so far vdpbf16ps does fewer
// multiply-adds per second than the FMA (bf16_dot_rate.h; figures:
// bench/peers/README.md), where these dot products lose to fp32.
// Heads not a multiple of 32 channels or windows over 256 tokens: fp32.
template <> EntryList<Op::window_attention, DType::bf16> entries() {
  static const Entry<Op::window_attention, DType::bf16> e[] = {
#if !defined(__aarch64__)
      {Isa::avx512_bf16, isa::kAvx512Bf16WindowAttention, &isa::window_bf16_fits, Isa::avx512_bf16},
#endif
      {Isa::scalar, &reference::window_attention_bf16, nullptr, Isa::amx_bf16, /*oracle_only=*/true}};
  return list(e);
}

// Nothing without AMX: the bf16 GEMMs are then oneDNN's.
template <> EntryList<Op::gemm, DType::bf16> entries() {
  static const Entry<Op::gemm, DType::bf16> e[] = {
#if !defined(__aarch64__)
      {Isa::amx_bf16, isa::kAmxGemm},
#endif
      {Isa::scalar, &reference::gemm_bf16, nullptr, Isa::amx_bf16, /*oracle_only=*/true}};
  return list(e);
}

int64_t gemm_f32_panel_width(Isa isa) {
  switch (isa) {
  case Isa::scalar: return 8;
#if defined(__aarch64__)
  case Isa::neon64: return isa::kNeon64.gemm_f32_nr;
#else
  case Isa::avx2: return isa::kAvx2.gemm_f32_nr;
  case Isa::avx512: return isa::kAvx512.gemm_f32_nr;
#endif
  default: return 0;
  }
}

} // namespace pola::kernels
