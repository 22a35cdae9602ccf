// NEON (AArch64 Advanced SIMD) instantiation of the kernel templates: the same
// kernels/simd/ sources as the x86 files, for xsimd's neon64 arch. NEON is the
// ARMv8-A baseline, so this file needs no extra flags; built only for aarch64.
#include "kernels/isa/tables.h"
#include "kernels/simd/table.hpp"

#if !XSIMD_WITH_NEON64
#error "kernels/isa/neon64.cpp is for aarch64 targets"
#endif

namespace pola::kernels::isa {
constexpr SimdKernels kNeon64 = simd::make_kernels<xsimd::neon64>();
} // namespace pola::kernels::isa
