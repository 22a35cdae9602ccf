// Scalar oracle of the AMX bf16 GEMM: the packed weights read back element by
// element, sums in double, the epilogue in the contract's order.
#include <cmath>
#include <cstring>

#include "kernels/gemm_bf16.h"
#include "kernels/simd/to_bf16_rne.hpp"

namespace pola::kernels::reference {

namespace {
float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
} // namespace

void gemm_bf16(const Bf16GemmArgs &g) {
  const Bf16GemmLayout &l = g.layout;
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < l.n; ++c) {
      const uint16_t *col = g.b + (c / 32) * (l.kp / 2) * 64 + (c % 32) * 2;
      double sum = 0;
      for (int64_t k = 0; k < l.k; ++k)
        sum += double(from_bf16(g.a[r * g.ld_a + k])) * double(from_bf16(col[(k / 2) * 64 + (k % 2)]));
      float v = static_cast<float>(sum) + (g.bias ? g.bias[c] : 0.f);
      if (g.dst_bf16) {
        static_cast<uint16_t *>(g.dst)[r * g.ld_dst + c] = bf16_rne(v);
      } else {
        float &d = static_cast<float *>(g.dst)[r * g.ld_dst + c];
        d = g.accumulate ? d + v : v;
      }
    }
}

} // namespace pola::kernels::reference
