// AVX2 + FMA instantiation of the kernel templates. The only file built with
// -mavx2 -mfma; its kernels run only where the registry found AVX2, FMA and
// OS support.
#include "kernels/isa/tables.h"
#include "kernels/simd/table.hpp"

#if !XSIMD_WITH_FMA3_AVX2
#error "kernels/isa/avx2.cpp must be compiled with -mavx2 -mfma"
#endif

namespace pola::kernels::isa {
constexpr SimdKernels kAvx2 = simd::make_kernels<xsimd::fma3<xsimd::avx2>>();
} // namespace pola::kernels::isa
