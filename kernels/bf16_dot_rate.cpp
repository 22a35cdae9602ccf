#include "kernels/bf16_dot_rate.h"

#include "kernels/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace pola::kernels {
namespace {

constexpr int kIterations = 4096;

// 16 independent chains cover latency x issue width on the cores we know
// (latency <= 6, 2 per cycle). Each step is asm on a named register: the
// compiler can neither merge the chains nor spill them to memory (an array of
// accumulators was spilled, which timed store forwarding, not the units).
#define POLA_16_CHAINS(OP) \
  OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11) OP(12) OP(13) OP(14) OP(15)
#define POLA_DECLARE_CHAIN(i) __m512 c##i = _mm512_set1_ps(float(i));
#define POLA_KEEP_CHAIN(i) __asm__ volatile("" ::"v"(c##i));

enum class Instruction { fma, dot };

// Seconds for kIterations x 16 of one instruction. The operands' bits serve
// both: as fp32, a = 0.997 and b = 0.001 keep the FMA chains finite; as bf16
// pairs, 0.996 and 0.001.
__attribute__((target("avx512f,avx512bf16"))) double chains_seconds(Instruction which) {
  POLA_16_CHAINS(POLA_DECLARE_CHAIN)
  const __m512 a = _mm512_castsi512_ps(_mm512_set1_epi32(0x3f7f3f7f));
  const __m512 b = _mm512_castsi512_ps(_mm512_set1_epi32(0x3a833a83));
  const auto t0 = std::chrono::steady_clock::now();
#define POLA_FMA_STEP(i) __asm__ volatile("vfmadd231ps %1, %2, %0" : "+v"(c##i) : "v"(a), "v"(b));
#define POLA_DOT_STEP(i) __asm__ volatile("vdpbf16ps %1, %2, %0" : "+v"(c##i) : "v"(a), "v"(b));
  if (which == Instruction::fma)
    for (int it = 0; it < kIterations; ++it) { POLA_16_CHAINS(POLA_FMA_STEP) }
  else
    for (int it = 0; it < kIterations; ++it) { POLA_16_CHAINS(POLA_DOT_STEP) }
#undef POLA_DOT_STEP
#undef POLA_FMA_STEP
  const auto t1 = std::chrono::steady_clock::now();
  POLA_16_CHAINS(POLA_KEEP_CHAIN)
  return std::chrono::duration<double>(t1 - t0).count();
}

#undef POLA_KEEP_CHAIN
#undef POLA_DECLARE_CHAIN
#undef POLA_16_CHAINS

double measure() {
  // An AMX CPU reports AMX first; ask for the instruction itself too.
  if (!cpu_supports(Isa::avx512_bf16) || !__builtin_cpu_supports("avx512bf16")) return 0.0;
  // Warm-up: lets a core that lowers its clock for 512-bit FMAs settle first.
  for (int i = 0; i < 8; ++i) chains_seconds(Instruction::fma);
  double fma = 1e30, dot = 1e30;
  for (int round = 0; round < 5; ++round) { // interleaved: drift hits both alike
    fma = std::min(fma, chains_seconds(Instruction::fma));
    dot = std::min(dot, chains_seconds(Instruction::dot));
  }
  // vdpbf16ps: 32 multiply-adds per instruction, vfmadd231ps: 16.
  return dot > 0.0 ? 2.0 * fma / dot : 0.0;
}

} // namespace

#else

namespace pola::kernels {
namespace {
// No vdpbf16ps off x86-64.
double measure() { return 0.0; }
} // namespace

#endif

double bf16_dot_speedup() {
  static const double speedup = measure();
  return speedup;
}

} // namespace pola::kernels
