// Small helpers shared by the xsimd kernel templates. Everything here is a
// template on the xsimd arch (or internal linkage), so each ISA translation
// unit gets its own copy and no inline code is shared across ISA flags.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <xsimd/xsimd.hpp>

namespace pola::kernels::simd {

template <class A> using Vec = xsimd::batch<float, A>;
template <class A> constexpr int kLanes = int(Vec<A>::size);
// Architectural vector registers: tiles are sized so accumulators stay in them.
template <class A> constexpr int kRegisters = kLanes<A> == 16 ? 32 : 16;

template <class A> constexpr int64_t round_up_lanes(int64_t n) {
  return (n + kLanes<A> - 1) / kLanes<A> * kLanes<A>;
}

// Loads n <= lanes floats (zero-filled above n), so loops need no scalar tail.
template <class A> inline Vec<A> load_first(const float *p, int n) {
  if (n >= kLanes<A>) return Vec<A>::load_unaligned(p);
  alignas(64) float tmp[kLanes<A>] = {};
  for (int i = 0; i < n; ++i) tmp[i] = p[i];
  return Vec<A>::load_aligned(tmp);
}

// Stores the first n <= lanes floats of v.
template <class A> inline void store_first(float *p, const Vec<A> &v, int n) {
  if (n >= kLanes<A>) return v.store_unaligned(p);
  alignas(64) float tmp[kLanes<A>];
  v.store_aligned(tmp);
  for (int i = 0; i < n; ++i) p[i] = tmp[i];
}

// |u|^p = exp(p ln|u|) for |u| >= FLT_MIN, and 0 below (SPEC section 8: 0
// stays 0; subnormal |u| give |u|^p < 1.2e-38 for p >= 1, flushed to 0).
// Its own logf/expf (Cephes-style minimax polynomials, ~1 ulp each) without
// the special-case handling xsimd::log/exp carry: u is finite here, and this
// function is a third of the attention's run time.
template <class A> inline Vec<A> abs_pow(const Vec<A> &u, const Vec<A> &p) {
  using I = xsimd::batch<int32_t, A>;
  const Vec<A> m = xsimd::abs(u);
  // m = 2^e * x with x in [sqrt(1/2), sqrt(2)): ln m = e ln 2 + log1p(x - 1).
  const I bits = xsimd::bitwise_cast<I>(m);
  const I e = (bits - I(0x3f3504f3)) >> 23;
  const Vec<A> x = xsimd::bitwise_cast<Vec<A>>(bits - (e << 23)) - Vec<A>(1.0f);
  Vec<A> poly(7.0376836292e-2f);
  poly = xsimd::fma(poly, x, Vec<A>(-1.1514610310e-1f));
  poly = xsimd::fma(poly, x, Vec<A>(1.1676998740e-1f));
  poly = xsimd::fma(poly, x, Vec<A>(-1.2420140846e-1f));
  poly = xsimd::fma(poly, x, Vec<A>(1.4249322787e-1f));
  poly = xsimd::fma(poly, x, Vec<A>(-1.6668057665e-1f));
  poly = xsimd::fma(poly, x, Vec<A>(2.0000714765e-1f));
  poly = xsimd::fma(poly, x, Vec<A>(-2.4999993993e-1f));
  poly = xsimd::fma(poly, x, Vec<A>(3.3333331174e-1f));
  const Vec<A> x2 = x * x, fe = xsimd::to_float(e);
  Vec<A> ln = xsimd::fma(x2 * x, poly, xsimd::fma(Vec<A>(-0.5f), x2, x));
  ln = xsimd::fma(fe, Vec<A>(-2.12194440e-4f), ln) + fe * Vec<A>(0.693359375f); // e ln2, two parts
  // exp(y), y = p ln m: y = n ln 2 + r, |r| <= ln2 / 2, exp(y) = 2^n exp(r).
  const Vec<A> y = p * ln;
  const Vec<A> yc = xsimd::min(xsimd::max(y, Vec<A>(-87.0f)), Vec<A>(88.0f));
  const Vec<A> n = xsimd::nearbyint(yc * Vec<A>(1.44269504088896341f));
  const Vec<A> r = xsimd::fma(n, Vec<A>(2.12194440e-4f), xsimd::fma(n, Vec<A>(-0.693359375f), yc));
  Vec<A> q(1.9875691500e-4f);
  q = xsimd::fma(q, r, Vec<A>(1.3981999507e-3f));
  q = xsimd::fma(q, r, Vec<A>(8.3334519073e-3f));
  q = xsimd::fma(q, r, Vec<A>(4.1665795894e-2f));
  q = xsimd::fma(q, r, Vec<A>(1.6666665459e-1f));
  q = xsimd::fma(q, r, Vec<A>(5.0000001201e-1f));
  const Vec<A> er = xsimd::fma(q, r * r, r) + Vec<A>(1.0f);
  const Vec<A> scale = xsimd::bitwise_cast<Vec<A>>((xsimd::to_int(n) + I(127)) << 23);
  Vec<A> out = er * scale;
  out = xsimd::select(y > Vec<A>(88.72f), Vec<A>(INFINITY), out);
  return xsimd::select(m >= Vec<A>(1.17549435e-38f) && y >= Vec<A>(-87.0f), out, Vec<A>(0.0f));
}

// Calls f(std::integral_constant<int, n>{}) for a runtime 1 <= n <= N: picks the
// tile instantiation for a remainder of n vectors.
template <int N, class F> inline void with_width(int n, F &&f) {
  if constexpr (N >= 1) {
    if (n == N) return f(std::integral_constant<int, N>{});
    with_width<N - 1>(n, f);
  }
}

} // namespace pola::kernels::simd
