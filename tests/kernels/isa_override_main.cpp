// Checks the POLA_ISA override in a fresh process (the cap is read once per
// process): argv[1] is the value CTest put in POLA_ISA
// (scalar|avx2|avx512|avx512_bf16|amx_bf16|bogus). The expected level of the
// ISA ladder comes from /proc/cpuinfo (cpuinfo_features.h), never from the
// detection under test: a cap this machine has is taken as it is; a cap it
// lacks, or an unknown name, leaves the best of what /proc/cpuinfo lists.
// The bf16 attention core follows the same cap.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cpuinfo_features.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const auto flags = pola::test::cpuinfo_features();
  if (!flags.readable) {
    std::printf("SKIPPED: /proc/cpuinfo has no flags line here\n");
    return 77;
  }
  const Isa best = flags.amx_bf16      ? Isa::amx_bf16
                   : flags.avx512_bf16 ? Isa::avx512_bf16
                   : flags.avx512      ? Isa::avx512
                   : flags.avx2        ? Isa::avx2
                                       : Isa::scalar;
  struct Cap { const char *name; bool here; Isa isa; };
  const Cap caps[] = {{"scalar", true, Isa::scalar},
                      {"avx2", flags.avx2, Isa::avx2},
                      {"avx512", flags.avx512, Isa::avx512},
                      {"avx512_bf16", flags.avx512_bf16, Isa::avx512_bf16},
                      {"amx_bf16", flags.amx_bf16, Isa::amx_bf16}};
  Isa want = best;
  for (const Cap &c : caps)
    if (!std::strcmp(argv[1], c.name) && c.here) want = c.isa;
  const Isa got = active_isa();
  std::printf("POLA_ISA=%s -> active %s (expected %s)\n", argv[1], isa_name(got), isa_name(want));
  // The kernels resolved follow the cap: fp32 ones on the best fp32 level at
  // or below it, the bf16 polarity core only at a bf16 level.
  const Isa want_fp32 = std::min(want, Isa::avx512);
  const Isa got_fp32 = resolve<Op::layernorm, DType::f32>().isa;
  PolarityAttnArgs shape;
  shape.heads = 1;
  shape.head_dim = 64;
  const auto core = resolve<Op::polarity_attention, DType::bf16>(shape);
  const bool want_core = want >= Isa::avx512_bf16, got_core = core.dtype == DType::bf16;
  std::printf("  fp32 kernels: %s (expected %s); bf16 attention core: %s (expected %s)\n", isa_name(got_fp32),
              isa_name(want_fp32), got_core ? isa_name(core.isa) : "no", want_core ? isa_name(want) : "no");
  return got == want && got_fp32 == want_fp32 && got_core == want_core && (!got_core || core.isa == want) ? 0 : 1;
}
