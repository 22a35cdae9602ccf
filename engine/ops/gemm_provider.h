// Which GEMM runs a linear layer: the one seam between the providers, so the
// x86-64 path (oneDNN's matmul, the own AMX bf16 GEMM) and the ARM64 path (the
// own fp32 GEMM, kernels/gemm_f32.h: Debian's arm64 oneDNN 2.6 runs reference
// loops on NEON) are siblings chosen here, not conditionals in the ops.
//
// fp32: POLA_GEMM_F32=onednn|own (read once per process) overrides the
// default: own in low-memory mode (its plain layout reads the file's weights
// in place, packing one panel per thread at a time; oneDNN's matmul on the
// file's layout peaked 1.5x the file plus arena on pvt_tiny, the own 1.3x;
// README.md, Performance), else the architecture's: oneDNN on x86-64, own
// elsewhere. A value that is neither is named on stderr and the default kept. bf16: the own AMX GEMM on
// the shapes own_bf16_gemm_wins() names where AMX-BF16 is active, else oneDNN.
#pragma once

#include <cstdint>

#include "engine/precision.h"

namespace pola::ops {

enum class GemmProvider { onednn, own_f32, own_amx_bf16 };

const char *gemm_provider_name(GemmProvider p);

// The provider of fp32 GEMMs, in low-memory mode or not: onednn or own_f32.
GemmProvider fp32_gemm_provider(bool low_memory);

// The provider for one linear layer of (rows x in) x (in x out) in `precision`.
GemmProvider choose_gemm(Precision precision, int64_t rows, int64_t in, int64_t out, bool low_memory);

// Whether the engine's AMX GEMM beats oneDNN's bf16 matmul on (rows x in x out).
bool own_bf16_gemm_wins(int64_t rows, int64_t in, int64_t out);

} // namespace pola::ops
