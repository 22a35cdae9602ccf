// Swish (SiLU), in place: x * sigmoid(x) = x / (1 + exp(-x)). For x far
// below 0, exp(-x) overflows to inf and the quotient is -0 (the true value
// rounds to it or is tiny); far above 0, exp(-x) is 0 and the result is x.
#pragma once

#include <cstdint>

#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

template <class A> inline Vec<A> swish_v(const Vec<A> &x) { return x / (Vec<A>(1.0f) + xsimd::exp(-x)); }

template <class A> void swish(float *x, int64_t n, int threads) {
  constexpr int L = kLanes<A>;
  constexpr int64_t kBlock = 4096; // elements per parallel work item
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && blocks > 1) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = (b + 1) * kBlock < n ? (b + 1) * kBlock : n;
    int64_t i = b * kBlock;
    for (; i + L <= end; i += L) swish_v<A>(Vec<A>::load_unaligned(x + i)).store_unaligned(x + i);
    if (i < end) store_first<A>(x + i, swish_v<A>(load_first<A>(x + i, int(end - i))), int(end - i));
  }
}

} // namespace pola::kernels::simd
