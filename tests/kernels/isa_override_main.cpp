// Checks the POLA_ISA override in a fresh process (the table is chosen once
// per process): argv[1] is the value CTest put in POLA_ISA
// (scalar|avx2|avx512|avx512_bf16|amx_bf16|bogus). The expected table and bf16
// instructions come from /proc/cpuinfo (cpuinfo_features.h), never from the
// detection under test: a cap this machine has is taken as it is; a cap it
// lacks, or an unknown name, leaves the best of what /proc/cpuinfo lists.
// The bf16 attention core follows the same cap.
#include <cstdio>
#include <cstring>

#include "cpuinfo_features.h"
#include "kernels/kernels.h"

using namespace pola::kernels;

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const auto flags = pola::test::cpuinfo_features();
  if (!flags.readable) {
    std::printf("SKIPPED: /proc/cpuinfo has no flags line here\n");
    return 77;
  }
  const Isa best = flags.avx512 ? Isa::avx512 : flags.avx2 ? Isa::avx2 : Isa::scalar;
  const Bf16Isa best_bf16 = flags.amx_bf16 ? Bf16Isa::amx_bf16 : flags.avx512_bf16 ? Bf16Isa::avx512_bf16 : Bf16Isa::none;
  struct Cap { const char *name; bool here; Isa isa; Bf16Isa bf16; };
  const Cap caps[] = {{"scalar", true, Isa::scalar, Bf16Isa::none},
                      {"avx2", flags.avx2, Isa::avx2, Bf16Isa::none},
                      {"avx512", flags.avx512, Isa::avx512, Bf16Isa::none},
                      {"avx512_bf16", flags.avx512_bf16, Isa::avx512, Bf16Isa::avx512_bf16},
                      {"amx_bf16", flags.amx_bf16, Isa::avx512, Bf16Isa::amx_bf16}};
  Isa want = best;
  Bf16Isa want_bf16 = best_bf16;
  for (const Cap &c : caps)
    if (!std::strcmp(argv[1], c.name) && c.here) {
      want = c.isa;
      want_bf16 = c.bf16;
    }
  const Isa got = active().isa;
  const Bf16Isa got_bf16 = active_bf16_isa();
  std::printf("POLA_ISA=%s -> active %s, bf16 %s (expected %s, bf16 %s)\n", argv[1], isa_name(got),
              bf16_isa_name(got_bf16), isa_name(want), bf16_isa_name(want_bf16));
  const bool want_core = want_bf16 != Bf16Isa::none, got_core = pola_attention_bf16() != nullptr;
  std::printf("  bf16 attention core: %s (expected %s)\n", got_core ? "yes" : "no", want_core ? "yes" : "no");
  return got == want && got_bf16 == want_bf16 && &active() == table_for(got) && got_core == want_core ? 0 : 1;
}
