// AMX-BF16 instantiation of the bf16 polarity core
// (kernels/simd/pola_attention_bf16.hpp) and of the bf16 GEMM
// (amx_gemm_bf16.hpp). Built with the avx512 flags; the functions that use
// bf16 or tile instructions carry their own target attribute, so nothing
// inline that this file shares with avx512.cpp differs. The kernels run only
// where the registry found AMX-BF16 with OS tile state and Linux's permission.
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/isa/tables.h"
#include "kernels/simd/amx_gemm_bf16.hpp"
#include "kernels/simd/pola_attention_bf16.hpp"

namespace pola::kernels::isa {

// Linux hands out the 8 KB tile state only to a process that asks for it
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a tile instruction
// without the permission faults.
bool amx_tiles_permitted() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  static const bool ok = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return ok;
}

constexpr KernelFn<Op::polarity_attention, DType::bf16> kAmxPolarityAttention =
    &simd::bf16_detail::polarity_attention_bf16<simd::bf16_detail::AmxProducts>;
constexpr KernelFn<Op::gemm, DType::bf16> kAmxGemm = &simd::bf16_detail::gemm_bf16;

} // namespace pola::kernels::isa
