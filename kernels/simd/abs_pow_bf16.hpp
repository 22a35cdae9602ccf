// |u|^p for features that are rounded to bf16 next (the bf16 polarity core,
// pola_attention_bf16.hpp): the fp32 abs_pow (common.hpp) with polynomials of
// lower degree, since bf16 keeps 8 significant bits (rounding error up to
// 2^-9 = 2e-3 relative) and fp32 accuracy there is paid for and then thrown
// away. Same method and edge cases as abs_pow's AVX-512 path:
//   |u| = 2^e x, x in [3/4, 3/2) (getexp / getmant), t = x - 1,
//   log2 x = t Q(t), Q of degree 4 (absolute error 1.3e-5 in log2 x),
//   y = p log2|u| = n + r, |r| <= 1/2, 2^r ~ P(r) of degree 3 (relative 7.5e-5),
//   2^n P(r) by scalef (saturates to inf and 0).
// Relative error of the result: 7.5e-5 + ln2 p 1.3e-5, i.e. 1.2e-4 at p = 5
// (checked in tests/kernels/test_abs_pow_bf16.cpp), 1/16 of bf16's rounding.
// The fp32 feature sums that use the same values (ksum, the denominators)
// carry that error too, well inside the core's 1e-2 goal. |u| < FLT_MIN (and
// 0) give 0. Both coefficient sets were fitted here (iteratively reweighted
// least squares towards minimax on the intervals above). 20 vector operations
// per 16 values against abs_pow's 27.
//
// Plain AVX-512 intrinsics under a target attribute (no xsimd), so a test can
// include this header in a translation unit built for any x86-64 and call it
// only where the CPU has AVX-512.
#pragma once

#include <immintrin.h>

#define POLA_AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

namespace pola::kernels::simd {

// log2(1 + t) / t on t in [-1/4, 1/2), highest degree first.
inline constexpr float kBf16Log2OverT[5] = {0.19011224806308746f, -0.37140941619873047f, 0.490968257188797f,
                                            -0.721483051776886f, 1.4424949884414673f};
// 2^r on |r| <= 1/2, highest degree first.
inline constexpr float kBf16Exp2[4] = {0.05517081543803215f, 0.2426091581583023f, 0.6932609677314758f,
                                       0.9999281764030457f};

POLA_AVX512_TARGET inline __m512 abs_pow_bf16(__m512 u, __m512 p) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 e_raw = _mm512_getexp_ps(u); // floor(log2|u|); -inf at 0
  const __m512 x = _mm512_getmant_ps(u, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_zero);
  // getmant halves mantissas >= 3/2, so the exponent of those is one more.
  const __m512 e = _mm512_mask_add_ps(e_raw, _mm512_cmp_ps_mask(x, one, _CMP_LT_OQ), e_raw, one);
  const __m512 t = _mm512_sub_ps(x, one);
  __m512 q = _mm512_set1_ps(kBf16Log2OverT[0]);
  for (int i = 1; i < 5; ++i) q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(kBf16Log2OverT[i]));
  // Clamped above so that |u| = inf gives inf (not inf - inf = NaN in r); at
  // 129, not abs_pow's 128: P(0) is 1 - 7e-5 here, and 2^128 P(0) is finite.
  const __m512 y = _mm512_min_ps(_mm512_mul_ps(p, _mm512_fmadd_ps(t, q, e)), _mm512_set1_ps(129.0f));
  const __m512 n = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(y, n);
  __m512 s = _mm512_set1_ps(kBf16Exp2[0]);
  for (int i = 1; i < 4; ++i) s = _mm512_fmadd_ps(s, r, _mm512_set1_ps(kBf16Exp2[i]));
  // |u| >= FLT_MIN exactly when its exponent is >= -126 (false for 0, NaN).
  return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(e_raw, _mm512_set1_ps(-126.0f), _CMP_GE_OQ), s, n);
}

} // namespace pola::kernels::simd
