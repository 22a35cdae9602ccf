// Checks the POLA_ISA override in a fresh process (the table is chosen once
// per process): argv[1] is the ISA the active table must be. CTest runs it
// with POLA_ISA=scalar|avx2|avx512|bogus; for an ISA this machine lacks, or an
// unknown name, the expected table is the best supported one.
#include <cstdio>
#include <cstring>

#include "kernels/kernels.h"

using namespace pola::kernels;

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  Isa best = cpu_supports(Isa::avx512) ? Isa::avx512 : cpu_supports(Isa::avx2) ? Isa::avx2 : Isa::scalar;
  Isa want = best;
  if (!std::strcmp(argv[1], "scalar")) want = Isa::scalar;
  else if (!std::strcmp(argv[1], "avx2") && cpu_supports(Isa::avx2)) want = Isa::avx2;
  else if (!std::strcmp(argv[1], "avx512") && cpu_supports(Isa::avx512)) want = Isa::avx512;
  const Isa got = active().isa;
  std::printf("POLA_ISA=%s -> active %s (expected %s)\n", argv[1], isa_name(got), isa_name(want));
  return got == want && &active() == table_for(got) ? 0 : 1;
}
