// AVX-512 instantiation of the kernel templates (xsimd's avx512f arch: every
// float op the kernels use lives there). The only file built with
// -mavx512f/bw/dq/vl -mfma; its kernels run only where the registry found
// them all plus OS zmm state.
#include "kernels/isa/tables.h"
#include "kernels/simd/table.hpp"

#if !XSIMD_WITH_AVX512F
#error "kernels/isa/avx512.cpp must be compiled with -mavx512f"
#endif

namespace pola::kernels::isa {
constexpr SimdKernels kAvx512 = simd::make_kernels<xsimd::avx512f>();
} // namespace pola::kernels::isa
