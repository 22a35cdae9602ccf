// Picks the kernel table once per process: the best ISA that both the CPU
// (CPUID) and the OS (XCR0 via XGETBV: the OS saves the wide registers on a
// context switch) support, unless POLA_ISA forces one.
#include "kernels/kernels.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "kernels/isa/tables.h"
#include "kernels/reference/reference.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define POLA_X86 1
#endif

namespace pola::kernels {

namespace {

struct CpuFeatures {
  bool avx2 = false;   // AVX + AVX2 + FMA, OS saves ymm
  bool avx512 = false; // AVX-512 F/BW/DQ/VL + AVX2 + FMA, OS saves zmm and opmasks
  bool avx512_bf16 = false; // + AVX512_BF16
  bool amx_bf16 = false;    // AMX-TILE + AMX-BF16 + avx512, OS saves the tile state
};

#if POLA_X86
unsigned long long read_xcr0() {
  unsigned lo = 0, hi = 0;
  // xgetbv with ecx = 0; encoded as bytes so no -mxsave flag is needed.
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if POLA_X86
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
  if (!osxsave || !avx) return f;
  const unsigned long long xcr0 = read_xcr0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;    // SSE + AVX state
  const bool os_zmm = (xcr0 & 0xE6) == 0xE6;  // + opmask, ZMM_Hi256, Hi16_ZMM
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const bool avx2 = b & (1u << 5);
  const bool f512 = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
  f.avx2 = avx2 && fma && os_ymm;
  f.avx512 = f.avx2 && f512 && dq && bw && vl && os_zmm;
  const bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24);
  const bool os_tiles = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  f.amx_bf16 = f.avx512 && amx_bf16 && amx_tile && os_tiles;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = f.avx512 && (a & (1u << 5));
#endif
  return f;
}

const CpuFeatures &features() {
  static const CpuFeatures f = detect();
  return f;
}

Isa best_supported() {
  if (cpu_supports(Isa::avx512)) return Isa::avx512;
  if (cpu_supports(Isa::avx2)) return Isa::avx2;
  return Isa::scalar;
}

// A POLA_ISA value: the kernel table it picks and the bf16 instructions it allows.
struct IsaCap {
  const char *name;
  Isa table;
  Bf16Isa bf16;
};
constexpr IsaCap kCaps[] = {{"scalar", Isa::scalar, Bf16Isa::none},
                            {"avx2", Isa::avx2, Bf16Isa::none},
                            {"avx512", Isa::avx512, Bf16Isa::none},
                            {"avx512_bf16", Isa::avx512, Bf16Isa::avx512_bf16},
                            {"amx_bf16", Isa::avx512, Bf16Isa::amx_bf16}};

Bf16Isa detect_bf16() {
  if (features().amx_bf16) return Bf16Isa::amx_bf16;
  if (features().avx512_bf16) return Bf16Isa::avx512_bf16;
  return Bf16Isa::none;
}

// The POLA_ISA cap in force, or null; the message about a bad value is printed once.
const IsaCap *choose_cap() {
  const char *forced = std::getenv("POLA_ISA");
  if (!forced || !*forced) return nullptr;
  for (const IsaCap &cap : kCaps)
    if (!std::strcmp(forced, cap.name)) {
      if (cpu_supports(cap.table) && static_cast<int>(cap.bf16) <= static_cast<int>(detect_bf16())) return &cap;
      std::fprintf(stderr, "pola: POLA_ISA=%s is not supported by this CPU/OS; using %s\n", forced,
                   isa_name(best_supported()));
      return nullptr;
    }
  std::fprintf(stderr, "pola: POLA_ISA=%s is not one of scalar|avx2|avx512|avx512_bf16|amx_bf16; using %s\n",
               forced, isa_name(best_supported()));
  return nullptr;
}

const IsaCap *cap() {
  static const IsaCap *c = choose_cap();
  return c;
}

const KernelTable &choose() { return *table_for(cap() ? cap()->table : best_supported()); }

} // namespace

const char *isa_name(Isa isa) {
  switch (isa) {
  case Isa::scalar: return "scalar";
  case Isa::avx2: return "avx2";
  case Isa::avx512: return "avx512";
  }
  return "unknown";
}

const char *bf16_isa_name(Bf16Isa isa) {
  switch (isa) {
  case Bf16Isa::none: return "none";
  case Bf16Isa::avx512_bf16: return "AVX512-BF16";
  case Bf16Isa::amx_bf16: return "AMX-BF16";
  }
  return "unknown";
}

Bf16Isa cpu_bf16_isa() { return detect_bf16(); }

Bf16Isa active_bf16_isa() { return cap() ? cap()->bf16 : detect_bf16(); }

const char *forced_isa() { return cap() ? cap()->name : nullptr; }

PolaAttnFn pola_attention_bf16_on(Bf16Isa isa) {
  if (isa == Bf16Isa::amx_bf16) return features().amx_bf16 ? isa::amx_pola_attention_bf16() : nullptr;
  if (isa == Bf16Isa::avx512_bf16) return features().avx512_bf16 ? isa::avx512_bf16_pola_attention() : nullptr;
  return nullptr;
}

PolaAttnFn pola_attention_bf16() {
  static const PolaAttnFn fn = pola_attention_bf16_on(active_bf16_isa());
  return fn;
}

WindowAttnFn window_attention_bf16_dot() {
  return features().avx512_bf16 ? isa::avx512_bf16_window_attention() : nullptr;
}

WindowAttnFn window_attention_bf16() {
  static const WindowAttnFn fn = active_bf16_isa() == Bf16Isa::avx512_bf16 ? window_attention_bf16_dot() : nullptr;
  return fn;
}

Bf16GemmFn gemm_bf16_amx() {
  static const Bf16GemmFn fn = active_bf16_isa() == Bf16Isa::amx_bf16 ? isa::amx_gemm_bf16() : nullptr;
  return fn;
}

bool isa_from_name(const char *name, Isa &isa) {
  for (Isa candidate : {Isa::scalar, Isa::avx2, Isa::avx512})
    if (!std::strcmp(name, isa_name(candidate))) {
      isa = candidate;
      return true;
    }
  return false;
}

bool cpu_supports(Isa isa) {
  switch (isa) {
  case Isa::scalar: return true;
  case Isa::avx2: return features().avx2;
  case Isa::avx512: return features().avx512;
  }
  return false;
}

const KernelTable *table_for(Isa isa) {
  if (!cpu_supports(isa)) return nullptr;
  switch (isa) {
  case Isa::scalar: return &reference::table();
  case Isa::avx2: return &isa::avx2_table();
  case Isa::avx512: return &isa::avx512_table();
  }
  return nullptr;
}

const KernelTable &active() {
  static const KernelTable &table = choose(); // C++11 guarantees one thread-safe init
  return table;
}

namespace reference {
const KernelTable &table() {
  static const KernelTable t{Isa::scalar, &layernorm, &gelu, &mul_rows, &pola_attention,
                             &window_attention, &to_bf16, &layernorm_bf16, &gelu_bf16, &abs_pow};
  return t;
}
} // namespace reference

} // namespace pola::kernels
