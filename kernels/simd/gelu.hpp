// Exact GELU (erf form, SPEC section 2), in place: 0.5 x (1 + erf(x / sqrt 2)).
#pragma once

#include <cstdint>

#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

template <class A> void gelu(float *x, int64_t n, int threads) {
  constexpr int L = kLanes<A>;
  constexpr int64_t kBlock = 4096; // elements per parallel work item
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && blocks > 1) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = (b + 1) * kBlock < n ? (b + 1) * kBlock : n;
    for (int64_t i = b * kBlock; i < end; i += L) {
      const int m = int(end - i < L ? end - i : L);
      const Vec<A> v = load_first<A>(x + i, m);
      const Vec<A> g = Vec<A>(0.5f) * v * (Vec<A>(1.0f) + xsimd::erf(v * Vec<A>(0.70710678118654752440f)));
      store_first<A>(x + i, g, m);
    }
  }
}

} // namespace pola::kernels::simd
