#include "engine/ops/gemm_provider.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/registry.h"

namespace pola::ops {

const char *gemm_provider_name(GemmProvider p) {
  switch (p) {
  case GemmProvider::onednn: return "onednn";
  case GemmProvider::own_f32: return "own_f32";
  case GemmProvider::own_amx_bf16: return "own_amx_bf16";
  }
  return "?";
}

namespace {

constexpr GemmProvider kDefaultFp32 =
#if defined(__x86_64__) || defined(_M_X64)
    GemmProvider::onednn; // oneDNN's JIT fp32 matmul
#else
    GemmProvider::own_f32; // oneDNN 2.6 has only reference fp32 GEMMs off x86 (but SVE-512)
#endif

enum class Fp32Choice { by_default, onednn, own };

Fp32Choice read_fp32_choice() {
  const char *s = std::getenv("POLA_GEMM_F32");
  if (!s || !*s) return Fp32Choice::by_default;
  if (!std::strcmp(s, "onednn")) return Fp32Choice::onednn;
  if (!std::strcmp(s, "own")) return Fp32Choice::own;
  std::fprintf(stderr, "pola: POLA_GEMM_F32=%s is neither onednn nor own; using the default\n", s);
  return Fp32Choice::by_default;
}

} // namespace

GemmProvider fp32_gemm_provider(bool low_memory) {
  static const Fp32Choice choice = read_fp32_choice();
  switch (choice) {
  case Fp32Choice::onednn: return GemmProvider::onednn;
  case Fp32Choice::own: return GemmProvider::own_f32;
  case Fp32Choice::by_default: break;
  }
  return low_memory ? GemmProvider::own_f32 : kDefaultFp32;
}

GemmProvider choose_gemm(Precision precision, int64_t rows, int64_t in, int64_t out, bool low_memory) {
  using kernels::Op;
  if (precision == Precision::bf16)
    return own_bf16_gemm_wins(rows, in, out) && kernels::resolve<Op::gemm, DType::bf16>(kernels::Bf16GemmArgs{}).fn
               ? GemmProvider::own_amx_bf16
               : GemmProvider::onednn;
  return fp32_gemm_provider(low_memory) == GemmProvider::own_f32 && kernels::resolve<Op::gemm, DType::f32>().fn
             ? GemmProvider::own_f32
             : GemmProvider::onednn;
}

bool own_bf16_gemm_wins(int64_t rows, int64_t in, int64_t out) {
  // Against oneDNN 2.6's AMX bf16 matmul the own kernel wins on many rows with
  // a short K and a wide N (Swin's stage-1/2 qkvg) and where K is not a
  // multiple of 32 (the 48-wide patch embeddings); oneDNN wins at M = 196 with
  // a wide N, at M = 392 and on narrow N (short calls, where the own kernel's
  // per-call cost shows), and the two are even at M = 49, where both stream
  // the weights from L3 near its read rate (figures: bench/gemm_bf16/README.md).
  if (rows < 784) return false;
  return in % 32 != 0 || (in <= 192 && out >= 288);
}

} // namespace pola::ops
