// AMX-BF16 instantiation of the bf16 polarity core
// (kernels/simd/pola_attention_bf16.hpp) and of the bf16 GEMM (amx_gemm_bf16.hpp). Built with the avx512 table's flags;
// the functions that use bf16 or tile instructions carry their own target
// attribute, so nothing inline that this file shares with avx512.cpp differs.
// Called only when dispatch.cpp found AMX-BF16 with OS tile state.
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/isa/tables.h"
#include "kernels/simd/amx_gemm_bf16.hpp"
#include "kernels/simd/pola_attention_bf16.hpp"

namespace pola::kernels::isa {

namespace {

// Linux hands out the 8 KB tile state only to a process that asks for it
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a tile instruction
// without the permission faults.
bool tiles_permitted() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  static const bool ok = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return ok;
}

void pola_attention_amx(const PolaAttnArgs &a) {
  if (a.head_dim > simd::bf16_detail::kMaxHeadDim) return avx512_table().pola_attention(a); // see kMaxHeadDim
  simd::bf16_detail::pola_attention_bf16<simd::bf16_detail::AmxProducts>(a);
}

} // namespace

PolaAttnFn amx_pola_attention_bf16() { return tiles_permitted() ? &pola_attention_amx : nullptr; }

Bf16GemmFn amx_gemm_bf16() { return tiles_permitted() ? &simd::bf16_detail::gemm_bf16 : nullptr; }

} // namespace pola::kernels::isa
