// Float rows -> bf16 rows (round to nearest even): the source of a bf16 GEMM.
// Integer work on the bits of whole vectors (bf16_rne's rule, NaN kept a
// quiet NaN), narrowed to 16 bits with the ISA's own pack instruction: the
// compiler's vectorisation of the scalar loop ran at ~0.5 cycle per value.
#pragma once

#include <cstdint>

#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

// Stores the first n <= lanes values of v as bf16 (what bf16_rne gives).
template <class A> inline void store_bf16(uint16_t *p, const Vec<A> &v, int n) {
  using U = xsimd::batch<uint32_t, A>;
  const U u = xsimd::bitwise_cast<U>(v);
  const U rounded = (u + U(0x7fffu) + ((u >> 16) & U(1u))) >> 16;
  const U r = xsimd::select((u & U(0x7fffffffu)) > U(0x7f800000u), (u >> 16) | U(0x40u), rounded);
  alignas(32) uint16_t tmp[kLanes<A>];
#if !POLA_SIMD_X86
  alignas(64) uint32_t t[kLanes<A>];
  r.store_aligned(t);
  for (int i = 0; i < kLanes<A>; ++i) tmp[i] = uint16_t(t[i]);
  if (n > kLanes<A>) n = kLanes<A>;
#else
  if constexpr (kLanes<A> == 16) {
    const __m256i h = _mm512_cvtepi32_epi16(r);
    if (n >= 16) return _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), h);
    _mm256_store_si256(reinterpret_cast<__m256i *>(tmp), h);
  } else {
    // packus works per 128-bit lane: qwords (r0-3, r0-3, r4-7, r4-7); keep the 1st and 3rd.
    const __m256i packed = _mm256_packus_epi32(r, r);
    const __m128i h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
    if (n >= 8) return _mm_storeu_si128(reinterpret_cast<__m128i *>(p), h);
    _mm_store_si128(reinterpret_cast<__m128i *>(tmp), h);
  }
#endif
  for (int i = 0; i < n; ++i) p[i] = tmp[i];
}

// y[r, c] = bf16(f(x[r, c])) over strided rows, f applied to whole vectors
// (zero-filled past the row's end): the rounding pass of to_bf16 and gelu_bf16.
template <class A, class F>
void map_to_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads,
                 F f) {
  constexpr int L = kLanes<A>;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows * cols > 16384) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * ld_x;
    uint16_t *yr = y + r * ld_y;
    int64_t c = 0;
    for (; c + L <= cols; c += L) store_bf16<A>(yr + c, f(Vec<A>::load_unaligned(xr + c)), L);
    if (c < cols) store_bf16<A>(yr + c, f(load_first<A>(xr + c, int(cols - c))), int(cols - c));
  }
}

template <class A>
void to_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads) {
  map_to_bf16<A>(x, ld_x, y, ld_y, rows, cols, threads, [](const Vec<A> &v) { return v; });
}

} // namespace pola::kernels::simd
