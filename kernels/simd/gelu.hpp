// Exact GELU (erf form, SPEC section 2), in place: 0.5 x (1 + erf(x / sqrt 2)).
#pragma once

#include <cstdint>

#include "kernels/simd/common.hpp"
#include "kernels/simd/to_bf16.hpp"

namespace pola::kernels::simd {

// erf(z) = z P(z^2) / Q(z^2) on |z| <= 3.92 (degree 5 / 5, coefficients
// fitted here by iterated weighted least squares on the relative error:
// 2.5e-8 in exact arithmetic; evaluated in fp32 the worst absolute error is
// 4.7e-7, about 8 ulp of 1). Beyond 3.92 erf rounds to +-1 in fp32, so z is
// clamped. One division and ten FMAs: a third of the instructions of an
// exp-based erf, and this runs on every hidden activation of every MLP.
template <class A> inline Vec<A> erf_rational(const Vec<A> &z) {
  const Vec<A> zc = xsimd::min(xsimd::max(z, Vec<A>(-3.92f)), Vec<A>(3.92f));
  const Vec<A> s = zc * zc;
  Vec<A> p(1.986783673e-06f);
  p = xsimd::fma(p, s, Vec<A>(2.845666895e-04f));
  p = xsimd::fma(p, s, Vec<A>(3.883364378e-03f));
  p = xsimd::fma(p, s, Vec<A>(5.310180783e-02f));
  p = xsimd::fma(p, s, Vec<A>(1.935454905e-01f));
  p = xsimd::fma(p, s, Vec<A>(1.128379107e+00f));
  Vec<A> q(3.742022818e-05f);
  q = xsimd::fma(q, s, Vec<A>(1.185576664e-03f));
  q = xsimd::fma(q, s, Vec<A>(1.520729065e-02f));
  q = xsimd::fma(q, s, Vec<A>(1.153501868e-01f));
  q = xsimd::fma(q, s, Vec<A>(5.048577785e-01f));
  q = xsimd::fma(q, s, Vec<A>(1.0f));
  return zc * p / q;
}

template <class A> inline Vec<A> gelu_erf(const Vec<A> &v) {
  const Vec<A> half_v = Vec<A>(0.5f) * v;
  return xsimd::fma(half_v, erf_rational<A>(v * Vec<A>(0.70710678118654752440f)), half_v);
}

// In place over n contiguous values.
template <class A> void gelu_span(float *x, int64_t n) {
  constexpr int L = kLanes<A>;
  int64_t i = 0;
  for (; i + L <= n; i += L) gelu_erf<A>(Vec<A>::load_unaligned(x + i)).store_unaligned(x + i);
  if (i < n) store_first<A>(x + i, gelu_erf<A>(load_first<A>(x + i, int(n - i))), int(n - i));
}

template <class A> void gelu(float *x, int64_t n, int threads) {
  constexpr int64_t kBlock = 4096; // elements per parallel work item
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && blocks > 1) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = (b + 1) * kBlock < n ? (b + 1) * kBlock : n;
    gelu_span<A>(x + b * kBlock, end - b * kBlock);
  }
}

// GELU of float rows rounded to bf16 rows (store_bf16's rounding).
template <class A>
void gelu_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads) {
  map_to_bf16<A>(x, ld_x, y, ld_y, rows, cols, threads, [](const Vec<A> &v) { return gelu_erf<A>(v); });
}

} // namespace pola::kernels::simd
