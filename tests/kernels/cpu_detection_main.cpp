// Detection finds every feature /proc/cpuinfo lists, and only those: the
// levels of the ISA ladder, the registry's kernels on them, and (with no
// POLA_ISA) the best of them active. Exit 77 (skipped) where /proc/cpuinfo
// cannot be read.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cpuinfo_features.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;

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
  check("AVX2 + FMA kernels", cpu_supports(Isa::avx2), flags.avx2);
  check("AVX-512 F/DQ/BW/VL kernels", cpu_supports(Isa::avx512), flags.avx512);
  check("AVX512-BF16 attention core",
        lookup<Op::polarity_attention, DType::bf16>(Isa::avx512_bf16) != nullptr, flags.avx512_bf16);
  check("AMX-BF16 attention core", lookup<Op::polarity_attention, DType::bf16>(Isa::amx_bf16) != nullptr,
        flags.amx_bf16);
  check("AMX-BF16 GEMM", resolve<Op::gemm, DType::bf16>(Bf16GemmArgs{}).fn != nullptr, flags.amx_bf16);
  const Isa best = flags.amx_bf16      ? Isa::amx_bf16
                   : flags.avx512_bf16 ? Isa::avx512_bf16
                   : flags.avx512      ? Isa::avx512
                   : flags.avx2        ? Isa::avx2
                                       : Isa::scalar;
  check("active ISA is the best one", active_isa() == best, true);
  check("fp32 kernels on the best fp32 ISA",
        resolve<Op::layernorm, DType::f32>().isa == std::min(best, Isa::avx512), true);
  std::printf("active: %s, bf16 %s\n", isa_name(active_isa()), bf16_instructions_name(active_isa()));
  return failures ? 1 : 0;
}
