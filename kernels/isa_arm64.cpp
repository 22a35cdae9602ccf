// What an aarch64 CPU supports of the ISA ladder, from the kernel's HWCAP
// words (getauxval): Linux sets a bit only where the CPU has the extension and
// the kernel enables it for user space. Built only for aarch64 targets.
#include <sys/auxv.h>

#include <string>

#include "kernels/isa.h"

// The HWCAP bits (arch/arm64/include/uapi/asm/hwcap.h), spelled here so older
// libc headers need not know them.
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1UL << 22)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif

namespace pola::kernels {

namespace {

struct CpuFeatures {
  bool asimd = false;   // Advanced SIMD: the neon64 level
  // Beside the ladder, for the dispatch of the bf16 and int8 cores to come.
  bool asimddp = false; // SDOT/UDOT
  bool bf16 = false;    // BFDOT/BFMMLA
  bool i8mm = false;    // SMMLA/UMMLA
  bool sve = false;
};

CpuFeatures detect() {
  CpuFeatures f;
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.asimd = hw & HWCAP_ASIMD;
  f.asimddp = hw & HWCAP_ASIMDDP;
  f.sve = hw & HWCAP_SVE;
  f.bf16 = hw2 & HWCAP2_BF16;
  f.i8mm = hw2 & HWCAP2_I8MM;
  return f;
}

const CpuFeatures &features() {
  static const CpuFeatures f = detect();
  return f;
}

} // namespace

bool cpu_supports(Isa isa) {
  switch (isa) {
  case Isa::scalar: return true;
  case Isa::neon64: return features().asimd;
  default: return false;
  }
}

const char *cpu_features() {
  static const std::string names = [] {
    const CpuFeatures &f = features();
    std::string s;
    auto add = [&](bool on, const char *name) {
      if (!on) return;
      if (!s.empty()) s += ' ';
      s += name;
    };
    add(f.asimd, "asimd");
    add(f.asimddp, "asimddp");
    add(f.bf16, "bf16");
    add(f.i8mm, "i8mm");
    add(f.sve, "sve");
    return s.empty() ? std::string("none") : s;
  }();
  return names.c_str();
}

// No int8 cores on aarch64 yet (oneDNN's int8 GEMMs there are reference
// loops): int8 inference is refused, through the same path as on an x86 CPU
// without VNNI.
const char *int8_instructions() { return nullptr; }

} // namespace pola::kernels
