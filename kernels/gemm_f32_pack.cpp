// Weight packing for the own fp32 GEMM (kernels/gemm_f32.h). Runs once per
// weight at model load; plain code, built without ISA flags.
#include <cstring>
#include <stdexcept>

#include "kernels/gemm_f32.h"

namespace pola::kernels {

void pack_gemm_f32_weights(const void *w, bool w_is_bf16, const F32GemmLayout &l, float *packed) {
  if (l.plain()) throw std::invalid_argument("pack_gemm_f32_weights: the plain layout is W itself, not packed");
  std::memset(packed, 0, static_cast<size_t>(l.packed_elems()) * sizeof(float));
  const auto *wf = static_cast<const float *>(w);
  const auto *wb = static_cast<const uint16_t *>(w);
  // Row by row of W (one output column): reads W sequentially.
  for (int64_t n = 0; n < l.n; ++n) {
    float *col = packed + (n / l.nr) * l.k * l.nr + n % l.nr;
    for (int64_t k = 0; k < l.k; ++k) {
      float v;
      if (w_is_bf16) {
        const uint32_t bits = uint32_t(wb[n * l.k + k]) << 16;
        std::memcpy(&v, &bits, sizeof v);
      } else {
        v = wf[n * l.k + k];
      }
      col[k * l.nr] = v;
    }
  }
}

} // namespace pola::kernels
