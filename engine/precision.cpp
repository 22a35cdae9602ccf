#include "engine/precision.h"

#include <cstdio>
#include <utility>

#include "kernels/bf16_dot_rate.h"
#include "kernels/isa.h"
#include "weights/error.h"

namespace pola {

namespace {
// Below this the 2 products per lane cannot pay for the conversions to bf16.
constexpr double kMinBf16DotSpeedup = 1.5;

// " (POLA_ISA=...)" when the ISA is capped, for the reasons and errors.
std::string isa_cap() {
  const char *forced = kernels::forced_isa();
  return forced ? std::string(" (POLA_ISA=") + forced + ")" : std::string();
}
} // namespace

const char *precision_name(Precision p) {
  switch (p) {
  case Precision::bf16: return "bf16";
  case Precision::int8: return "int8";
  default: return "fp32";
  }
}

bool precision_request_from_name(const std::string &name, PrecisionRequest &out) {
  if (name == "fp32") out = PrecisionRequest::fp32;
  else if (name == "bf16") out = PrecisionRequest::bf16;
  else if (name == "int8") out = PrecisionRequest::int8;
  else if (name == "auto") out = PrecisionRequest::automatic;
  else return false;
  return true;
}

Bf16Speed bf16_speed() {
  const kernels::Isa isa = kernels::active_isa();
  const std::string cap = isa_cap();
  // With AMX bf16 is faster. With AVX512-BF16 alone it depends on the core:
  // where vdpbf16ps issues as fast as an FMA (AMD EPYC Zen 4) bf16 models ran
  // faster than fp32; on an Intel Xeon whose AMX is not exposed it does fewer
  // multiply-adds per second than the FMA, and there bf16 models ran slower.
  // So the rate is measured on the CPU at hand (figures: bench/peers/README.md).
  if (isa == kernels::Isa::avx512_bf16) {
    const double speedup = kernels::bf16_dot_speedup();
    char rate[160];
    std::snprintf(rate, sizeof rate, "this CPU has AVX512-BF16 but not AMX-BF16; its bf16 dot products measured "
                  "%.2fx the fp32 FMA rate (bf16 needs >= %.1fx)", speedup, kMinBf16DotSpeedup);
    return {speedup >= kMinBf16DotSpeedup, rate + cap};
  }
  if (!kernels::native_bf16(isa)) return {false, "this CPU has neither AMX-BF16 nor AVX512-BF16" + cap};
  return {true, std::string("this CPU has ") + kernels::bf16_instructions_name(isa) + cap};
}

PrecisionChoice resolve_precision(PrecisionRequest request, bool quantized, const std::string &model_path) {
  if (request == PrecisionRequest::fp32) return {Precision::fp32, "requested"};
  const char *int8 = kernels::int8_instructions();
  if (request == PrecisionRequest::int8) {
    if (!int8)
      throw InputError("--precision int8: this CPU has neither AMX-INT8 nor AVX512-VNNI/AVX-VNNI (int8 dot product "
                       "instructions)" + isa_cap() + "; use --precision fp32 or bf16");
    if (!model_path.empty() && !quantized)
      throw InputError(model_path + ": --precision int8 needs a quantized model file, and this one holds no int8 "
                       "layers; quantize it first: pola quantize --model " + model_path +
                       " --calibration IMAGES -o MODEL.int8.pola");
    return {Precision::int8, std::string("requested; this CPU has ") + int8 + isa_cap()};
  }
  if (request == PrecisionRequest::automatic && quantized && int8)
    return {Precision::int8, std::string("the model file is quantized and this CPU has ") + int8 + isa_cap()};
  if (request == PrecisionRequest::automatic) {
    Bf16Speed speed = bf16_speed();
    return {speed.faster ? Precision::bf16 : Precision::fp32, std::move(speed.reason)};
  }
  const kernels::Isa isa = kernels::active_isa();
  if (kernels::native_bf16(isa)) {
    // Runs as asked, but says so where bf16 is the slower choice here.
    const Bf16Speed speed = bf16_speed();
    return {Precision::bf16, speed.faster ? std::string("requested; this CPU has ") + kernels::bf16_instructions_name(isa) +
                                                isa_cap()
                                          : "requested, though slower than fp32 here: " + speed.reason};
  }
  throw InputError("--precision bf16: this CPU has neither AMX-BF16 nor AVX512-BF16 (native bf16 matrix "
                   "instructions)" + isa_cap() + "; use --precision fp32, or auto to pick bf16 only where it is native");
}

OpPrecisions op_precisions(Precision p) {
  OpPrecisions ops;
  if (p == Precision::int8) {
    ops.gemm = Precision::int8;
    return ops;
  }
  ops.gemm = ops.embed = p;
  ops.attention = p == Precision::bf16 && bf16_speed().faster ? Precision::bf16 : Precision::fp32;
  return ops;
}

} // namespace pola
