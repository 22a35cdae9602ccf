// The fp32 GEMM's contract (kernels/gemm_f32.h) in scalar code: products and
// sums in double from the packed weights, rounded once to float.
#include <stdexcept>

#include "kernels/gemm_f32.h"

namespace pola::kernels::reference {

void gemm_f32(const F32GemmArgs &g) {
  const F32GemmLayout &l = g.layout;
  if (l.nr < 0) throw std::invalid_argument("gemm_f32: panel width must not be negative");
  // W[c][k] is at col(c) + k * step: a panel column, or a row of the plain layout.
  const int64_t step = l.plain() ? 1 : l.nr;
#pragma omp parallel for num_threads(g.threads > 1 ? g.threads : 1) if (g.threads > 1) schedule(static)
  for (int64_t r = 0; r < g.rows; ++r) {
    const float *a = g.a + r * g.ld_a;
    float *d = g.dst + r * g.ld_dst;
    for (int64_t c = 0; c < l.n; ++c) {
      const float *col = l.plain() ? g.b + c * l.k : g.b + (c / l.nr) * l.k * l.nr + c % l.nr;
      double s = 0.0;
      for (int64_t k = 0; k < l.k; ++k) s += double(a[k]) * double(col[k * step]);
      if (g.bias) s += double(g.bias[c]);
      if (g.accumulate) s += double(d[c]);
      d[c] = float(s);
    }
  }
}

} // namespace pola::kernels::reference
