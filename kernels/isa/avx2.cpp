// AVX2 + FMA instantiation of the kernel templates. The only file built with
// -mavx2 -mfma; called only when dispatch.cpp found AVX2, FMA and OS support.
#include "kernels/isa/tables.h"
#include "kernels/simd/table.hpp"

#if !XSIMD_WITH_FMA3_AVX2
#error "kernels/isa/avx2.cpp must be compiled with -mavx2 -mfma"
#endif

namespace pola::kernels::isa {
const KernelTable &avx2_table() {
  static const KernelTable t = simd::make_table<xsimd::fma3<xsimd::avx2>>(Isa::avx2);
  return t;
}
} // namespace pola::kernels::isa
