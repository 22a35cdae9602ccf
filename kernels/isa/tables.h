// The per-ISA kernel tables, each defined in its own translation unit compiled
// with that ISA's flags. Call only after cpu_supports() said yes.
#pragma once

#include "kernels/gemm_bf16.h"
#include "kernels/kernels.h"

namespace pola::kernels::isa {

const KernelTable &avx2_table();
const KernelTable &avx512_table();
// The bf16 polarity core on AMX tiles, or nullptr if the OS refused the tile state.
PolaAttnFn amx_pola_attention_bf16();
// The bf16 polarity core on AVX512-BF16 dot products (no tiles).
PolaAttnFn avx512_bf16_pola_attention();
// The bf16 window attention on AVX512-BF16 dot products.
WindowAttnFn avx512_bf16_window_attention();
// The AMX bf16 GEMM, or nullptr if the OS refused the tile state.
Bf16GemmFn amx_gemm_bf16();

} // namespace pola::kernels::isa
