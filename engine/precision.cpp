#include "engine/precision.h"

#include "kernels/kernels.h"
#include "weights/error.h"

namespace pola {

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
  // auto picks bf16 only where it is faster: with AMX. With AVX512-BF16 alone,
  // oneDNN 2.6's bf16 GEMMs made whole models slower than fp32 (swin_t 52.8 vs
  // 37.0 ms, pvt_tiny 25.2 vs 18.4 ms, 2 threads, measured on a Xeon with the
  // ISA capped to AVX512-BF16), so there auto stays fp32; bf16 can still be
  // asked for by name.
  if (request == PrecisionRequest::automatic && isa == kernels::Bf16Isa::avx512_bf16)
    return {Precision::fp32, "this CPU has AVX512-BF16 but not AMX-BF16, where bf16 GEMMs measured slower than "
                             "fp32" + cap};
  if (isa != kernels::Bf16Isa::none)
    return {Precision::bf16, std::string(request == PrecisionRequest::bf16 ? "requested; " : "") + "this CPU has " +
                                 kernels::bf16_isa_name(isa) + cap};
  if (request == PrecisionRequest::automatic)
    return {Precision::fp32, "this CPU has neither AMX-BF16 nor AVX512-BF16" + cap};
  throw InputError("--precision bf16: this CPU has neither AMX-BF16 nor AVX512-BF16 (native bf16 matrix "
                   "instructions)" + cap + "; use --precision fp32, or auto to pick bf16 only where it is native");
}

} // namespace pola
