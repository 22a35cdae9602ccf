// The ISA ladder's names and the POLA_ISA cap, applied here only. What the CPU
// and OS support is per architecture: isa_x86.cpp (CPUID, XCR0, Linux's AMX
// tile permission), isa_arm64.cpp (HWCAP).
#include "kernels/isa.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>


namespace pola::kernels {

namespace {

// The POLA_ISA cap in force, or null; the message about a bad value is printed once.
const Isa *choose_cap() {
  static Isa chosen;
  const char *forced = std::getenv("POLA_ISA");
  if (!forced || !*forced) return nullptr;
  if (!isa_from_name(forced, chosen)) {
#if defined(__aarch64__)
    std::fprintf(stderr, "pola: POLA_ISA=%s is not one of scalar|neon64; using %s\n", forced, isa_name(cpu_isa()));
#else
    std::fprintf(stderr, "pola: POLA_ISA=%s is not one of scalar|avx2|avx512|avx512_bf16|amx_bf16; using %s\n",
                 forced, isa_name(cpu_isa()));
#endif
    return nullptr;
  }
  if (!cpu_supports(chosen)) {
    std::fprintf(stderr, "pola: POLA_ISA=%s is not supported by this CPU/OS; using %s\n", forced,
                 isa_name(cpu_isa()));
    return nullptr;
  }
  return &chosen;
}

const Isa *cap() {
  static const Isa *c = choose_cap(); // C++11 guarantees one thread-safe init
  return c;
}

} // namespace

const char *isa_name(Isa isa) {
  switch (isa) {
  case Isa::scalar: return "scalar";
  case Isa::avx2: return "avx2";
  case Isa::avx512: return "avx512";
  case Isa::avx512_bf16: return "avx512_bf16";
  case Isa::amx_bf16: return "amx_bf16";
  case Isa::neon64: return "neon64";
  }
  return "unknown";
}

bool isa_from_name(const char *name, Isa &isa) {
  for (Isa candidate : kIsaLadder)
    if (!std::strcmp(name, isa_name(candidate))) {
      isa = candidate;
      return true;
    }
  return false;
}

Isa cpu_isa() {
  Isa best = Isa::scalar;
  for (Isa isa : kIsaLadder)
    if (cpu_supports(isa)) best = isa;
  return best;
}

Isa active_isa() {
  static const Isa isa = cap() ? *cap() : cpu_isa();
  return isa;
}

const char *forced_isa() { return cap() ? isa_name(*cap()) : nullptr; }

const char *bf16_instructions_name(Isa isa) {
  switch (isa) {
  case Isa::amx_bf16: return "AMX-BF16";
  case Isa::avx512_bf16: return "AVX512-BF16";
  default: return "none";
  }
}

bool native_bf16(Isa isa) { return isa == Isa::avx512_bf16 || isa == Isa::amx_bf16; }

} // namespace pola::kernels
