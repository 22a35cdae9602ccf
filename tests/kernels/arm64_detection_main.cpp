// aarch64 under qemu-user: detection reads the HWCAP words that qemu's CPU
// model (QEMU_CPU, set by CTest) hands the guest, a source independent of the
// code under test, so each model's extensions are known in advance. Checks
// the extensions named, the active level of the ladder (after any POLA_ISA
// cap) and that the fp32 kernels resolve on that level.
//   test_kernels_arm64_detection "FEATURES" ACTIVE_ISA
#include <cstdio>
#include <cstring>

#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s \"FEATURES\" ACTIVE_ISA\n", argv[0]);
    return 2;
  }
  int failures = 0;
  auto check = [&](const char *what, const char *got, const char *want) {
    const bool ok = !std::strcmp(got, want);
    std::printf("%-24s got '%s', expected '%s' %s\n", what, got, want, ok ? "ok" : "MISMATCH");
    failures += !ok;
  };
  check("HWCAP extensions", cpu_features(), argv[1]);
  check("active ISA", isa_name(active_isa()), argv[2]);
  check("fp32 kernels' ISA", isa_name(resolve<Op::layernorm, DType::f32>().isa), argv[2]);
  return failures ? 1 : 0;
}
