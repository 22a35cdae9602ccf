// AVX-512 instantiation of the kernel templates (xsimd's avx512f arch: every
// float op the kernels use lives there). The only file built with
// -mavx512f/bw/dq/vl -mfma; called only when dispatch.cpp found them all
// plus OS zmm state.
#include "kernels/isa/tables.h"
#include "kernels/simd/table.hpp"

#if !XSIMD_WITH_AVX512F
#error "kernels/isa/avx512.cpp must be compiled with -mavx512f"
#endif

namespace pola::kernels::isa {
const KernelTable &avx512_table() {
  static const KernelTable t = simd::make_table<xsimd::avx512f>(Isa::avx512);
  return t;
}
} // namespace pola::kernels::isa
