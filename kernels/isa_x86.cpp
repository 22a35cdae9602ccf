// What an x86-64 CPU and its OS support of the ISA ladder: CPUID, XCR0 via
// XGETBV (the OS saves the wide registers on a context switch) and, for AMX,
// Linux's tile permission. Built only for x86-64 targets.
#include <cpuid.h>

#include "kernels/isa.h"
#include "kernels/isa/tables.h"

namespace pola::kernels {

namespace {

struct CpuFeatures {
  bool avx2 = false;   // AVX + AVX2 + FMA, OS saves ymm
  bool avx512 = false; // AVX-512 F/BW/DQ/VL + AVX2 + FMA, OS saves zmm and opmasks
  bool avx512_bf16 = false; // + AVX512_BF16
  bool amx_bf16 = false;    // AMX-TILE + AMX-BF16 + avx512, OS saves the tile state
  // The int8 dot products beside the ladder (int8_instructions()).
  bool avx_vnni = false;    // VEX-encoded vpdpbusd on ymm, + avx2
  bool avx512_vnni = false; // EVEX vpdpbusd, + avx512
  bool amx_int8 = false;    // AMX-INT8 tiles, + amx_bf16's tile state
};

unsigned long long read_xcr0() {
  unsigned lo = 0, hi = 0;
  // xgetbv with ecx = 0; encoded as bytes so no -mxsave flag is needed.
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
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
  f.amx_int8 = f.avx512 && (d & (1u << 25)) && amx_tile && os_tiles;
  f.avx512_vnni = f.avx512 && (c & (1u << 11));
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avx512_bf16 = f.avx512 && (a & (1u << 5));
    f.avx_vnni = f.avx2 && (a & (1u << 4));
  }
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
  case Isa::avx2: return features().avx2;
  case Isa::avx512: return features().avx512;
  case Isa::avx512_bf16: return features().avx512_bf16;
  case Isa::amx_bf16: return features().amx_bf16 && isa::amx_tiles_permitted();
  case Isa::neon64: return false;
  }
  return false;
}

const char *cpu_features() { return ""; }

const char *int8_instructions() {
  const Isa isa = active_isa();
  const CpuFeatures &f = features();
  if (isa >= Isa::amx_bf16 && f.amx_int8 && isa::amx_tiles_permitted()) return "AMX-INT8";
  if (isa >= Isa::avx512 && f.avx512_vnni) return "AVX512-VNNI";
  if (isa >= Isa::avx2 && f.avx_vnni) return "AVX-VNNI";
  return nullptr;
}

} // namespace pola::kernels
