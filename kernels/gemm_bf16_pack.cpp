// Weight packing for the AMX bf16 GEMM (kernels/gemm_bf16.h). Runs once per
// weight at model load; plain code, built without ISA flags.
#include <cstring>

#include "kernels/gemm_bf16.h"
#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels {

void pack_gemm_bf16_weights(const void *w, bool w_is_bf16, const Bf16GemmLayout &l, uint16_t *packed) {
  std::memset(packed, 0, static_cast<size_t>(l.packed_elems()) * sizeof(uint16_t));
  const auto *wf = static_cast<const float *>(w);
  const auto *wb = static_cast<const uint16_t *>(w);
  const int64_t half_kp = l.kp / 2;
  // Row by row of W (one output column): reads W sequentially.
  for (int64_t n = 0; n < l.n; ++n) {
    uint16_t *col = packed + (n / 32) * half_kp * 64 + (n % 32) * 2;
    for (int64_t k = 0; k < l.k; ++k)
      col[(k / 2) * 64 + (k % 2)] = w_is_bf16 ? wb[n * l.k + k] : bf16_rne(wf[n * l.k + k]);
  }
}

} // namespace pola::kernels
