#include "engine/precision.h"

#include <cstdio>

#include "kernels/bf16_dot_rate.h"
#include "kernels/kernels.h"
#include "weights/error.h"

namespace pola {

namespace {
// Below this the 2 products per lane cannot pay for the conversions to bf16.
constexpr double kMinBf16DotSpeedup = 1.5;
} // namespace

const char *precision_name(Precision p) { return p == Precision::bf16 ? "bf16" : "fp32"; }

bool precision_request_from_name(const std::string &name, PrecisionRequest &out) {
  if (name == "fp32") out = PrecisionRequest::fp32;
  else if (name == "bf16") out = PrecisionRequest::bf16;
  else if (name == "auto") out = PrecisionRequest::automatic;
  else return false;
  return true;
}

PrecisionChoice resolve_precision(PrecisionRequest request) {
  if (request == PrecisionRequest::fp32) return {Precision::fp32, "requested"};
  const kernels::Bf16Isa isa = kernels::active_bf16_isa();
  const char *forced = kernels::forced_isa();
  const std::string cap = forced ? std::string(" (POLA_ISA=") + forced + ")" : std::string();
  // auto picks bf16 only where it is faster. With AMX it is (swin_t 0.36-0.41x
  // fp32's time). With AVX512-BF16 alone it depends on the core: where
  // vdpbf16ps issues as fast as an FMA (measured 2.0x the FMA multiply-add
  // rate on AMD EPYC Zen 4) bf16 models ran in 0.48-0.62x fp32's time; on a Xeon
  // with the ISA capped to AVX512-BF16, oneDNN 2.6's bf16 GEMMs made models
  // 1.4-1.6x slower (that Xeon's rate is not yet measured). So auto measures
  // the rate on the CPU at hand and asks for at least kMinBf16DotSpeedup.
  if (request == PrecisionRequest::automatic && isa == kernels::Bf16Isa::avx512_bf16) {
    const double speedup = kernels::bf16_dot_speedup();
    char rate[160];
    std::snprintf(rate, sizeof rate, "this CPU has AVX512-BF16 but not AMX-BF16; its bf16 dot products measured "
                  "%.2fx the fp32 FMA rate (bf16 needs >= %.1fx)", speedup, kMinBf16DotSpeedup);
    return {speedup >= kMinBf16DotSpeedup ? Precision::bf16 : Precision::fp32, rate + cap};
  }
  if (isa != kernels::Bf16Isa::none)
    return {Precision::bf16, std::string(request == PrecisionRequest::bf16 ? "requested; " : "") + "this CPU has " +
                                 kernels::bf16_isa_name(isa) + cap};
  if (request == PrecisionRequest::automatic)
    return {Precision::fp32, "this CPU has neither AMX-BF16 nor AVX512-BF16" + cap};
  throw InputError("--precision bf16: this CPU has neither AMX-BF16 nor AVX512-BF16 (native bf16 matrix "
                   "instructions)" + cap + "; use --precision fp32, or auto to pick bf16 only where it is native");
}

} // namespace pola
