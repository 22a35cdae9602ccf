// Weight packing for the own fp32 GEMM (kernels/gemm_f32.h). Runs once per
// weight at model load, or panel by panel on every call for the plain layout
// (low-memory mode); plain code, built without ISA flags.
#include <cstring>
#include <stdexcept>

#include "kernels/gemm_f32.h"

namespace pola::kernels {

void pack_gemm_f32_panel(const float *w, const F32GemmLayout &l, int64_t p, float *panel) {
  const int64_t c0 = p * l.nr;
  for (int64_t c = 0; c < l.nr; ++c) {
    const float *row = w + (c0 + c) * l.k;
    if (c0 + c < l.n)
      for (int64_t q = 0; q < l.k; ++q) panel[q * l.nr + c] = row[q];
    else
      for (int64_t q = 0; q < l.k; ++q) panel[q * l.nr + c] = 0.f;
  }
}

void pack_gemm_f32_weights(const void *w, bool w_is_bf16, const F32GemmLayout &l, float *packed) {
  if (l.plain()) throw std::invalid_argument("pack_gemm_f32_weights: the plain layout is W itself, not packed");
  const auto *wf = static_cast<const float *>(w);
  if (!w_is_bf16) {
    for (int64_t p = 0; p < l.panels(); ++p) pack_gemm_f32_panel(wf, l, p, packed + p * l.k * l.nr);
    return;
  }
  std::memset(packed, 0, static_cast<size_t>(l.packed_elems()) * sizeof(float));
  const auto *wb = static_cast<const uint16_t *>(w);
  // bf16 bits widened exactly, row by row of W (one output column): reads W sequentially.
  for (int64_t n = 0; n < l.n; ++n) {
    float *col = packed + (n / l.nr) * l.k * l.nr + n % l.nr;
    for (int64_t k = 0; k < l.k; ++k) {
      const uint32_t bits = uint32_t(wb[n * l.k + k]) << 16;
      std::memcpy(&col[k * l.nr], &bits, sizeof(float));
    }
  }
}

} // namespace pola::kernels
