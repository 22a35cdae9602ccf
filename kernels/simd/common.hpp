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

// Non-temporal store of a whole vector to 64-byte (AVX-512) / 32-byte (AVX2)
// aligned memory: the line goes to DRAM without being read first. Only for
// outputs far larger than the caches, which nothing reads back soon; callers
// issue store_fence() before others read the data.
template <class A> inline void store_stream(float *p, const Vec<A> &v) {
  if constexpr (kLanes<A> == 16)
    _mm512_stream_ps(p, v);
  else
    _mm256_stream_ps(p, v);
}
inline void store_fence() { _mm_sfence(); }

// |u|^p = 2^(p log2|u|), the core of both feature maps (SPEC section 8: 0
// stays 0). Neither xsimd::log nor xsimd::exp: this function is ~12% of the
// attention's run time (65k x 8 x 64), and base 2 needs fewer operations:
//  - log2: |u| = 2^e x with x in [sqrt(1/2), sqrt(2)); log2(x) = t Q(t), t = x - 1,
//    Q a degree-8 polynomial (fitted here by weighted least squares,
//    fp32 error 6e-8 in log2 units), and the exponent e is added exactly by one FMA;
//  - exp2: y = p log2|u| = n + r, |r| <= 1/2, 2^y = 2^(n-1) * 2 P(r), with P a
//    degree-6 fit of 2^r (fp32 relative error 1e-7) whose coefficients are
//    doubled (exactly) so the 2^(n-1) scale stays a normal float for n = 128.
// y is clamped to [-126.5, 128]: n = 128 gives inf for true values >= 2^128
// and the exact value in [2^127.5, 2^128); n = -126 gives a zero scale, so
// results below ~2.8e-38, and every |u| < FLT_MIN, are 0 (SPEC 8). Relative
// error: ~3e-7 for |u| near 1, growing with |y| to ~5e-6 as fp32's rounding
// of y itself (as in any fp32 pow built on exp and log).
template <class A> inline Vec<A> abs_pow(const Vec<A> &u, const Vec<A> &p) {
  using I = xsimd::batch<int32_t, A>;
  const Vec<A> m = xsimd::abs(u);
  const I bits = xsimd::bitwise_cast<I>(m);
  const I e = (bits - I(0x3f3504f3)) >> 23; // 0x3f3504f3 = sqrt(1/2)
  const Vec<A> t = xsimd::bitwise_cast<Vec<A>>(bits - (e << 23)) - Vec<A>(1.0f);
  Vec<A> q(0.12583549320697784f);
  q = xsimd::fma(q, t, Vec<A>(-0.20726914703845978f));
  q = xsimd::fma(q, t, Vec<A>(0.2157159000635147f));
  q = xsimd::fma(q, t, Vec<A>(-0.23894493281841278f));
  q = xsimd::fma(q, t, Vec<A>(0.28791624307632446f));
  q = xsimd::fma(q, t, Vec<A>(-0.3607036769390106f));
  q = xsimd::fma(q, t, Vec<A>(0.48091062903404236f));
  q = xsimd::fma(q, t, Vec<A>(-0.7213473320007324f));
  q = xsimd::fma(q, t, Vec<A>(1.4426950216293335f));
  const Vec<A> log2m = xsimd::fma(t, q, xsimd::to_float(e));
  const Vec<A> y = xsimd::min(xsimd::max(p * log2m, Vec<A>(-126.5f)), Vec<A>(128.0f));
  const Vec<A> n = xsimd::nearbyint(y);
  const Vec<A> r = y - n;
  Vec<A> s(2.0f * 0.0001534580806037411f);
  s = xsimd::fma(s, r, Vec<A>(2.0f * 0.0013399932067841291f));
  s = xsimd::fma(s, r, Vec<A>(2.0f * 0.009618489071726799f));
  s = xsimd::fma(s, r, Vec<A>(2.0f * 0.05550328642129898f));
  s = xsimd::fma(s, r, Vec<A>(2.0f * 0.24022646248340607f));
  s = xsimd::fma(s, r, Vec<A>(2.0f * 0.6931471824645996f));
  s = xsimd::fma(s, r, Vec<A>(2.0f));
  const Vec<A> scale = xsimd::bitwise_cast<Vec<A>>((xsimd::to_int(n) + I(126)) << 23); // 2^(n-1)
  return xsimd::select(m >= Vec<A>(1.17549435e-38f), s * scale, Vec<A>(0.0f));
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
