// Checks the POLA_ISA override in a fresh process (the table is chosen once
// per process): argv[1] is the ISA the active table must be. CTest runs it
// with POLA_ISA=scalar|avx2|avx512|avx512_bf16|amx_bf16|bogus; for an ISA this
// machine lacks, or an unknown name, the expected table is the best supported
// one. The bf16 instructions allowed, and so the bf16 attention core, follow the same cap.
#include <cstdio>
#include <cstring>

#include "kernels/kernels.h"

using namespace pola::kernels;

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  Isa best = cpu_supports(Isa::avx512) ? Isa::avx512 : cpu_supports(Isa::avx2) ? Isa::avx2 : Isa::scalar;
  Isa want = best;
  Bf16Isa want_bf16 = cpu_bf16_isa();
  Isa named = best;
  if (isa_from_name(argv[1], named) && cpu_supports(named)) { // scalar|avx2|avx512: no bf16 instructions
    want = named;
    want_bf16 = Bf16Isa::none;
  }
  if (!std::strcmp(argv[1], "avx512_bf16") && cpu_bf16_isa() != Bf16Isa::none) {
    want = Isa::avx512;
    want_bf16 = Bf16Isa::avx512_bf16;
  }
  if (!std::strcmp(argv[1], "amx_bf16") && cpu_bf16_isa() == Bf16Isa::amx_bf16) want = Isa::avx512;
  const Isa got = active().isa;
  const Bf16Isa got_bf16 = active_bf16_isa();
  std::printf("POLA_ISA=%s -> active %s, bf16 %s (expected %s, bf16 %s)\n", argv[1], isa_name(got),
              bf16_isa_name(got_bf16), isa_name(want), bf16_isa_name(want_bf16));
  // The bf16 attention core follows the cap: present exactly when AMX-BF16 or AVX512-BF16 is allowed.
  const bool want_core = want_bf16 != Bf16Isa::none, got_core = pola_attention_bf16() != nullptr;
  std::printf("  bf16 attention core: %s (expected %s)\n", got_core ? "yes" : "no", want_core ? "yes" : "no");
  return got == want && got_bf16 == want_bf16 && &active() == table_for(got) && got_core == want_core ? 0 : 1;
}
