// Float rows -> int8 rows: q = clamp(nearest-even(x / scale), -127, 127), the
// source of an int8 GEMM with a static per-tensor scale (symmetric: no zero
// point, -128 unused). The quotient rounds to an int32 with the current
// (nearest-even) mode, then narrows with the ISA's saturating packs; the
// clamp comes first so the packs never saturate on their own.
#pragma once

#include <cstdint>

#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

// Stores the first n <= lanes values of q (int32 already in [-127, 127]) as int8.
template <class A> inline void store_s8(int8_t *p, const xsimd::batch<int32_t, A> &q, int n) {
#if !POLA_SIMD_X86
  alignas(64) int32_t t[kLanes<A>];
  q.store_aligned(t);
  for (int i = 0; i < n && i < kLanes<A>; ++i) p[i] = int8_t(t[i]);
#else
  alignas(16) int8_t tmp[16];
  __m128i bytes;
  if constexpr (kLanes<A> == 16) {
    bytes = _mm512_cvtsepi32_epi8(q);
  } else {
    // packs works per 128-bit lane: (q0-3, q0-3 | q4-7, q4-7) as int16, then bytes; gather dwords 0 and 4.
    const __m256i w = _mm256_packs_epi32(q, q);
    const __m256i b = _mm256_packs_epi16(w, w);
    bytes = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0)));
  }
  if (n >= kLanes<A>) {
    if constexpr (kLanes<A> == 16) return _mm_storeu_si128(reinterpret_cast<__m128i *>(p), bytes);
    else return _mm_storel_epi64(reinterpret_cast<__m128i *>(p), bytes);
  }
  _mm_store_si128(reinterpret_cast<__m128i *>(tmp), bytes);
  for (int i = 0; i < n; ++i) p[i] = tmp[i];
#endif
}

template <class A>
void quantize_s8(const float *x, int64_t ld_x, int8_t *y, int64_t ld_y, int64_t rows, int64_t cols, float scale,
                 int threads) {
  constexpr int L = kLanes<A>;
  using I = xsimd::batch<int32_t, A>;
  const Vec<A> s(scale);
  const I lo(-127), hi(127);
  const auto q = [&](const Vec<A> &v) { return xsimd::min(xsimd::max(xsimd::nearbyint_as_int(v / s), lo), hi); };
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows * cols > 16384) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * ld_x;
    int8_t *yr = y + r * ld_y;
    int64_t c = 0;
    for (; c + L <= cols; c += L) store_s8<A>(yr + c, q(Vec<A>::load_unaligned(xr + c)), L);
    if (c < cols) store_s8<A>(yr + c, q(load_first<A>(xr + c, int(cols - c))), int(cols - c));
  }
}

} // namespace pola::kernels::simd
