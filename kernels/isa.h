// The one ISA ladder of the kernels, what this CPU and OS support of it, and
// the POLA_ISA cap. Every kernel of the registry (registry.h) is keyed by one
// of these levels.
#pragma once

namespace pola::kernels {

// Ordered: a higher level adds instructions to the one below it.
//   scalar       plain C++ (the references; any x86-64)
//   avx2         AVX2 + FMA
//   avx512       AVX-512 F/BW/DQ/VL + FMA
//   avx512_bf16  + AVX512-BF16 (vdpbf16ps: two bf16 products per fp32 lane)
//   amx_bf16     + AMX-TILE/AMX-BF16 tiles (Linux granted the tile state)
// cpu_supports() checks each level's own instructions, so a level is usable
// even where one in between is missing (an AMX CPU without AVX512-BF16).
// On aarch64 the ladder is scalar, neon64 (Advanced SIMD, the ARMv8-A
// baseline); the x86 levels exist as names there but are never supported, and
// neon64 is never supported on x86. Levels compare only within one ladder.
// (The bf16 BFDOT/BFMMLA and int8 SDOT/SMMLA cores, when written, go above
// neon64; cpu_features() already reports the extensions they need.)
enum class Isa { scalar = 0, avx2 = 1, avx512 = 2, avx512_bf16 = 3, amx_bf16 = 4, neon64 = 5 };
#if defined(__aarch64__)
inline constexpr Isa kIsaLadder[] = {Isa::scalar, Isa::neon64};
inline constexpr Isa kIsaTop = Isa::neon64;
#else
inline constexpr Isa kIsaLadder[] = {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512_bf16, Isa::amx_bf16};
inline constexpr Isa kIsaTop = Isa::amx_bf16;
#endif

// "scalar", "avx2", "avx512", "avx512_bf16", "amx_bf16" (x86-64), "scalar",
// "neon64" (aarch64): the POLA_ISA values.
const char *isa_name(Isa isa);
// The ISA isa_name() calls `name`; false if none is.
bool isa_from_name(const char *name, Isa &isa);

// Whether the CPU (CPUID), the OS (XCR0 state, and for AMX Linux's tile
// permission) support the level's instructions; on aarch64, the kernel's
// HWCAP bits. Defined per architecture (isa_x86.cpp, isa_arm64.cpp).
bool cpu_supports(Isa isa);
// The SIMD extensions seen beside the ladder, as `pola --version` prints them
// (aarch64: "asimd asimddp bf16 i8mm ..." from HWCAP/HWCAP2; "" on x86, where
// the ladder level says it all).
const char *cpu_features();
// The highest level cpu_supports().
Isa cpu_isa();

// The highest level the kernels may use: cpu_isa(), or the level POLA_ISA
// names when this machine supports it (otherwise an error is printed once
// and cpu_isa() is used). The only place the cap is applied; chosen once,
// thread-safe.
Isa active_isa();
// The POLA_ISA value in force (a level this machine supports), or nullptr
// when no cap is set: what the oneDNN ISA cap follows.
const char *forced_isa();

// The native bf16 matrix instructions of a level, as reports print them:
// "AMX-BF16", "AVX512-BF16", or "none" below avx512_bf16.
const char *bf16_instructions_name(Isa isa);
// Whether the level runs the bf16 precision's kernels (native bf16 dot
// products: AVX512-BF16 or AMX-BF16). Asked by name, never as `isa >=
// avx512_bf16`: levels of the other ladder compare above it too.
bool native_bf16(Isa isa);

// The int8 dot-product instructions the int8 GEMMs (oneDNN's) may use under
// the POLA_ISA cap: "AMX-INT8" (amx_bf16 level and the CPU has AMX-INT8),
// "AVX512-VNNI" (avx512 level and up), "AVX-VNNI" (avx2 level and up), or
// nullptr: int8 inference is refused there. They sit beside the ladder, not on
// it: VNNI came before AVX512-BF16 on Intel, and AVX-VNNI exists on AVX2-only cores.
const char *int8_instructions();

} // namespace pola::kernels
