#include "engine/dnnl_context.h"

#include <cstring>

#include "kernels/isa.h"

namespace pola {
namespace {

// A forced POLA_ISA emulates a CPU with at most that ISA for oneDNN too, so
// that, e.g., POLA_ISA=avx512 runs the GEMMs without AVX512-BF16 or AMX on a
// machine that has them. Must run before oneDNN creates any primitive.
void cap_onednn_isa() {
  const char *forced = kernels::forced_isa();
  if (!forced) return;
  using isa = dnnl::cpu_isa;
  dnnl::cpu_isa cap = isa::all;
  if (!std::strcmp(forced, "scalar")) cap = isa::sse41;  // oneDNN's lowest
  // The caps include the VNNI int8 dot products where the CPU has them
  // (kernels::int8_instructions() says the same); they change no fp32 or bf16 path.
  else if (!std::strcmp(forced, "avx2")) cap = isa::avx2_vnni;
  else if (!std::strcmp(forced, "avx512")) cap = isa::avx512_core_vnni;
  else if (!std::strcmp(forced, "avx512_bf16")) cap = isa::avx512_core_bf16;
  dnnl::set_max_cpu_isa(cap);
}

} // namespace

dnnl::engine &cpu_engine() {
  static dnnl::engine eng = [] {
    cap_onednn_isa();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return eng;
}

} // namespace pola
