// Small helpers shared by the xsimd kernel templates. Everything here is a
// template on the xsimd arch (or internal linkage), so each ISA translation
// unit gets its own copy and no inline code is shared across ISA flags.
#pragma once

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

// |u|^p as exp(p log|u|), and exactly 0 where u == 0 (SPEC section 8).
template <class A> inline Vec<A> abs_pow(const Vec<A> &u, const Vec<A> &p) {
  const Vec<A> m = xsimd::abs(u);
  return xsimd::select(m > Vec<A>(0.0f), xsimd::exp(p * xsimd::log(m)), Vec<A>(0.0f));
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
