// LEGACY ENTRY POINTS, kept only while engine/models/ still calls them; to be
// deleted once it uses the registry (kernels/registry.h). Each is a thin
// forwarding shim over resolve(): no kernel and no fallback rule lives here.
// New code must not use them.
#pragma once

#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/registry.h"

namespace pola::kernels {

// PolarityAttnArgs with the abs_pow feature map's exponents as `power`.
struct PolaAttnArgs {
  int64_t n_q = 0, n_k = 0;
  int heads = 0, head_dim = 0;
  const float *q = nullptr; int64_t ld_q = 0;
  const float *k = nullptr; int64_t ld_k = 0;
  const float *v = nullptr; int64_t ld_v = 0;
  const float *pos_enc = nullptr;
  const float *inv_scale = nullptr;
  const float *power = nullptr;
  float *out = nullptr; int64_t ld_out = 0;
  int threads = 1;
};
using PolaAttnFn = void (*)(const PolaAttnArgs &args);
using WindowAttnFn = void (*)(const WindowAttnArgs &args);

// The fp32 kernels resolve() picks (layernorm_bf16, gelu_bf16, to_bf16: the
// ones keyed bf16, which write bf16).
struct KernelTable {
  KernelFn<Op::layernorm, DType::fp32> layernorm;
  KernelFn<Op::gelu, DType::fp32> gelu;
  KernelFn<Op::mul_rows, DType::fp32> mul_rows;
  PolaAttnFn pola_attention;
  KernelFn<Op::window_attention, DType::fp32> window_attention;
  KernelFn<Op::to_bf16, DType::bf16> to_bf16;
  KernelFn<Op::layernorm, DType::bf16> layernorm_bf16;
  KernelFn<Op::gelu, DType::bf16> gelu_bf16;
};
const KernelTable &active();

// A function running resolve<polarity_attention, bf16>(args) per call, or
// nullptr when that resolves to fp32 for a 64-channel head (no bf16 core here).
PolaAttnFn pola_attention_bf16();
// The same for resolve<window_attention, bf16> (probed with 49 tokens, 32 channels).
WindowAttnFn window_attention_bf16();

} // namespace pola::kernels
