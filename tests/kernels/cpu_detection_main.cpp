// Dispatch finds every feature /proc/cpuinfo lists, and only those: the
// kernel tables, the bf16 instructions, and (with no POLA_ISA) the best of
// them active. Exit 77 (skipped) where /proc/cpuinfo cannot be read.
#include <cstdio>
#include <cstdlib>

#include "cpuinfo_features.h"
#include "kernels/gemm_bf16.h"
#include "kernels/kernels.h"

using namespace pola::kernels;

int main() {
  const auto flags = pola::test::cpuinfo_features();
  if (!flags.readable) {
    std::printf("SKIPPED: /proc/cpuinfo has no flags line here\n");
    return 77;
  }
  if (const char *forced = std::getenv("POLA_ISA"); forced && *forced) {
    std::printf("POLA_ISA=%s is set; this test checks detection without it\n", forced);
    return 2;
  }
  int failures = 0;
  auto check = [&](const char *what, bool got, bool want) {
    std::printf("%-38s dispatch %-3s /proc/cpuinfo %-3s %s\n", what, got ? "yes" : "no", want ? "yes" : "no",
                got == want ? "ok" : "MISMATCH");
    failures += got != want;
  };
  check("AVX2 + FMA table", cpu_supports(Isa::avx2), flags.avx2);
  check("AVX-512 F/DQ/BW/VL table", cpu_supports(Isa::avx512), flags.avx512);
  check("AVX512-BF16 attention core", pola_attention_bf16_on(Bf16Isa::avx512_bf16) != nullptr, flags.avx512_bf16);
  check("AMX-BF16 (best bf16 instructions)", cpu_bf16_isa() == Bf16Isa::amx_bf16, flags.amx_bf16);
  check("AMX-BF16 GEMM", gemm_bf16_amx() != nullptr, flags.amx_bf16);
  const Isa best = flags.avx512 ? Isa::avx512 : flags.avx2 ? Isa::avx2 : Isa::scalar;
  check("active table is the best one", active().isa == best, true);
  const Bf16Isa best_bf16 = flags.amx_bf16 ? Bf16Isa::amx_bf16 : flags.avx512_bf16 ? Bf16Isa::avx512_bf16 : Bf16Isa::none;
  check("active bf16 instructions are the best", active_bf16_isa() == best_bf16, true);
  std::printf("active: %s, bf16 %s\n", isa_name(active().isa), bf16_isa_name(active_bf16_isa()));
  return failures ? 1 : 0;
}
