// Small helpers shared by the xsimd kernel templates. Everything here is a
// template on the xsimd arch (or internal linkage), so each ISA translation
// unit gets its own copy and no inline code is shared across ISA flags.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <xsimd/xsimd.hpp>

// The x86 branches below use the ISA's own intrinsics; elsewhere (aarch64's
// neon64) portable xsimd code or small stack buffers stand in.
#if defined(__x86_64__) || defined(__i386__)
#define POLA_SIMD_X86 1
#else
#define POLA_SIMD_X86 0
#include <atomic>
#include <cstring>
#endif

namespace pola::kernels::simd {

template <class A> using Vec = xsimd::batch<float, A>;
template <class A> constexpr int kLanes = int(Vec<A>::size);
// Architectural vector registers: tiles are sized so accumulators stay in them.
template <class A> constexpr int kRegisters = kLanes<A> == 16 ? 32 : 16;

template <class A> constexpr int64_t round_up_lanes(int64_t n) {
  return (n + kLanes<A> - 1) / kLanes<A> * kLanes<A>;
}

// Lanes [0, n) of a mask for AVX2's maskload/maskstore (sign bit set); a
// template like everything here, so each ISA's unit keeps its own copy.
#if POLA_SIMD_X86
template <class A> inline __m256i first_lanes_avx2(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

// Loads n <= lanes floats (zero-filled above n), so loops need no scalar tail.
// A masked load, which touches no memory past n: a partial vector assembled
// through the stack instead cost a store-forwarding stall on every call
// (per softmax row in window attention).
template <class A> inline Vec<A> load_first(const float *p, int n) {
  if (n >= kLanes<A>) return Vec<A>::load_unaligned(p);
#if POLA_SIMD_X86
  if constexpr (kLanes<A> == 16)
    return Vec<A>(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1u), p));
  else
    return Vec<A>(_mm256_maskload_ps(p, first_lanes_avx2<A>(n)));
#else
  alignas(64) float t[kLanes<A>] = {};
  std::memcpy(t, p, sizeof(float) * n);
  return Vec<A>::load_aligned(t);
#endif
}

// Stores the first n <= lanes floats of v (a masked store).
template <class A> inline void store_first(float *p, const Vec<A> &v, int n) {
  if (n >= kLanes<A>) return v.store_unaligned(p);
#if POLA_SIMD_X86
  if constexpr (kLanes<A> == 16)
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), v);
  else
    _mm256_maskstore_ps(p, first_lanes_avx2<A>(n), v);
#else
  alignas(64) float t[kLanes<A>];
  v.store_aligned(t);
  std::memcpy(p, t, sizeof(float) * n);
#endif
}

// Non-temporal store of a whole vector to 64-byte (AVX-512) / 32-byte (AVX2)
// aligned memory: the line goes to DRAM without being read first. Only for
// outputs far larger than the caches, which nothing reads back soon; callers
// issue store_fence() before others read the data.
template <class A> inline void store_stream(float *p, const Vec<A> &v) {
#if POLA_SIMD_X86
  if constexpr (kLanes<A> == 16)
    _mm512_stream_ps(p, v);
  else
    _mm256_stream_ps(p, v);
#else
  v.store_aligned(p);
#endif
}
#if POLA_SIMD_X86
inline void store_fence() { _mm_sfence(); }
#else
inline void store_fence() { std::atomic_thread_fence(std::memory_order_release); }
#endif

#if !POLA_SIMD_X86
// v c - w on even lanes, v c + w on odd lanes, w = (v with its pairs swapped)
// s: what x86's fmaddsub with a pair permute computes, fused alike.
template <class A> inline Vec<A> rotate_pairs(const Vec<A> &v, const Vec<A> &c, const Vec<A> &s) {
  alignas(64) float t[kLanes<A>], sign[kLanes<A>];
  v.store_aligned(t);
  for (int i = 0; i < kLanes<A>; i += 2) {
    std::swap(t[i], t[i + 1]);
    sign[i] = -1.0f;
    sign[i + 1] = 1.0f;
  }
  return xsimd::fma(v, c, Vec<A>::load_aligned(t) * s * Vec<A>::load_aligned(sign));
}
#endif

// Horner's rule for c[0] x^(N-1) + ... + c[N-1] (highest degree first).
template <class A, std::size_t N> inline Vec<A> horner(const Vec<A> &x, const std::array<float, N> &c) {
  Vec<A> acc(c[0]);
  for (std::size_t i = 1; i < N; ++i) acc = xsimd::fma(acc, x, Vec<A>(c[i]));
  return acc;
}

// abs_pow's polynomials (fitted here; see abs_pow).
// Q(t) ~ log2(1 + t) / t for 1 + t in [3/4, 3/2) (AVX-512's getmant range)
// and in [sqrt(1/2), sqrt(2)) (the AVX2 bit split).
constexpr std::array<float, 9> kLog2OverT34 = {
    0.07627047598361969f, -0.17237578332424164f, 0.21599121391773224f, -0.24289953708648682f, 0.2882396876811981f,
    -0.3605712652206421f, 0.48090070486068726f,  -0.7213485240936279f, 1.4426950216293335f};
constexpr std::array<float, 9> kLog2OverTSqrt2 = {
    0.12583549320697784f, -0.20726914703845978f, 0.2157159000635147f,  -0.23894493281841278f, 0.28791624307632446f,
    -0.3607036769390106f, 0.48091062903404236f,  -0.7213473320007324f, 1.4426950216293335f};
// P(r) ~ 2^r for |r| <= 1/2, and 2 P(r) (doubling is exact).
constexpr std::array<float, 7> kExp2 = {0.0001534580806037411f, 0.0013399932067841291f, 0.009618489071726799f,
                                        0.05550328642129898f,   0.24022646248340607f,   0.6931471824645996f,
                                        1.0f};
constexpr std::array<float, 7> kTwiceExp2 = {2.0f * kExp2[0], 2.0f * kExp2[1], 2.0f * kExp2[2], 2.0f * kExp2[3],
                                             2.0f * kExp2[4], 2.0f * kExp2[5], 2.0f * kExp2[6]};

// |u|^p = 2^(p log2|u|), the core of both feature maps (SPEC section 8: 0
// stays 0). Neither xsimd::log nor xsimd::exp: this function is a sizeable
// share of the attention's run time (bench/attention/README.md), and base 2
// needs fewer operations.
//  - log2: |u| = 2^e x with x in [3/4, 3/2) (AVX-512) or [sqrt(1/2), sqrt(2))
//    (AVX2); log2(x) = t Q(t), t = x - 1, Q of degree 8 fitted here by
//    weighted least squares for each interval (relative error 4e-8 / 6e-8),
//    and the exponent e is added exactly by one FMA;
//  - exp2: y = p log2|u| = n + r, |r| <= 1/2, 2^y = 2^n P(r), P a degree-6
//    fit of 2^r (fp32 relative error 1e-7).
// AVX-512 has instructions for the exponent and mantissa (getexp, getmant)
// and for the 2^n scaling (scalef, which also saturates to inf and 0), so
// that path takes ~24 vector operations against AVX2's 32 (AVX2 before
// 2026-12-02: 33 operations, ~36 uops with vroundps and vblendvps; now each
// operation is one uop; results bit for bit the same).
// Results: |u| < FLT_MIN (and 0) give 0; a true value >= 2^128 gives inf.
// The AVX2 path clamps y to [-126.5, 128] and flushes results below ~2.8e-38
// to 0; AVX-512's scalef returns them as subnormals. Relative error, both
// paths: ~4e-8 mean for |u| near 1, growing with |y| to ~3e-6 as fp32's
// rounding of y itself (as in any fp32 pow built on exp and log); mean 3.9e-7
// over |u| in [2^-20, 2^6), p in [1, 5].
template <class A> inline Vec<A> abs_pow(const Vec<A> &u, const Vec<A> &p) {
#if POLA_SIMD_X86
  if constexpr (kLanes<A> == 16) {
    const __m512 e_raw = _mm512_getexp_ps(u); // floor(log2|u|); -inf at 0
    const __m512 x = _mm512_getmant_ps(u, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_zero);
    // getmant halves mantissas >= 3/2, so the exponent of those is one more.
    const __m512 e = _mm512_mask_add_ps(e_raw, _mm512_cmp_ps_mask(x, _mm512_set1_ps(1.0f), _CMP_LT_OQ), e_raw,
                                        _mm512_set1_ps(1.0f));
    const Vec<A> t = Vec<A>(x) - Vec<A>(1.0f);
    const Vec<A> q = horner<A>(t, kLog2OverT34);
    // Clamped above so that |u| = inf gives inf (not inf - inf = NaN in r).
    const Vec<A> y = xsimd::min(p * xsimd::fma(t, q, Vec<A>(e)), Vec<A>(128.0f));
    const Vec<A> n = xsimd::nearbyint(y);
    const Vec<A> r = y - n;
    const Vec<A> s = horner<A>(r, kExp2);
    // |u| >= FLT_MIN exactly when its exponent is >= -126 (false for 0, NaN).
    return Vec<A>(_mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(e_raw, _mm512_set1_ps(-126.0f), _CMP_GE_OQ), s, n));
  } else
#endif
  {
    using I = xsimd::batch<int32_t, A>;
    const I bits = xsimd::bitwise_cast<I>(u) & I(0x7fffffff); // |u|
    const I e = (bits - I(0x3f3504f3)) >> 23;                  // 0x3f3504f3 = sqrt(1/2)
    const Vec<A> t = xsimd::bitwise_cast<Vec<A>>(bits - (e << 23)) - Vec<A>(1.0f);
    const Vec<A> q = horner<A>(t, kLog2OverTSqrt2);
    const Vec<A> log2m = xsimd::fma(t, q, xsimd::to_float(e));
    const Vec<A> y = xsimd::min(xsimd::max(p * log2m, Vec<A>(-126.5f)), Vec<A>(128.0f));
    // Rounding by a "shifter" instead of vroundps (2 uops on Intel) and a
    // float -> int conversion: y + 1.5 * 2^23 + 126 lies in [2^23, 2^24),
    // where the floats are the integers, so the sum k is rounded to the
    // nearest (ties to even, as nearbyint) and its low mantissa bits hold
    // n + 126 in [0, 254], n = round(y); k - shifter is n exactly.
    const Vec<A> shifter(12582912.0f + 126.0f);
    const Vec<A> k = y + shifter;
    const Vec<A> r = y - (k - shifter);
    // P's coefficients doubled (exactly) and the scale 2^(n-1), so the scale
    // stays a normal float for n = 128; n = -126 gives a zero scale.
    const Vec<A> s = horner<A>(r, kTwiceExp2);
    const Vec<A> scale = xsimd::bitwise_cast<Vec<A>>(xsimd::bitwise_cast<I>(k) << 23); // 2^(n-1)
    // An AND with the compare mask, not a blend (vblendvps is 2-3 uops on Intel).
    const Vec<A> m = xsimd::bitwise_cast<Vec<A>>(bits);
#if POLA_SIMD_X86
    return Vec<A>(_mm256_and_ps(m >= Vec<A>(1.17549435e-38f), s * scale));
#else
    return xsimd::select(m >= Vec<A>(1.17549435e-38f), s * scale, Vec<A>(0.0f));
#endif
  }
}

// The largest lane of v, by shuffles (a store and a scalar loop over the
// lanes cost a store-forwarding stall per call).
template <class A> inline float lane_max(const Vec<A> &v) {
#if !POLA_SIMD_X86
  alignas(64) float t[kLanes<A>];
  v.store_aligned(t);
  float m = t[0];
  for (int i = 1; i < kLanes<A>; ++i) m = t[i] > m || t[i] != t[i] ? t[i] : m;
  return m;
#else
  if constexpr (kLanes<A> == 16) {
    return _mm512_reduce_max_ps(v);
  } else {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
#endif
}

// e^r for |r| <= ln2/2: its Taylor polynomial of degree 7 (truncation below
// 6e-9 relative), highest degree first.
constexpr std::array<float, 8> kExpTaylor7 = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24,
                                              1.0f / 6,    0.5f,       1.0f,       1.0f};

// exp(x) in fp32, within 0.9 ulp over x in [-20, 89) (measured against exp
// in double; exp(0) = 1 exactly): x = n ln2 + r with ln2 split in two
// (Cody-Waite), so r is exact to fp32, then 2^n e^r. x is clamped to
// [-87, 89]: smaller results are not needed (the AVX2 and AVX-512 paths give
// different tiny values there), and above 89 the result is inf either way; a
// NaN stays NaN. Inlined: xsimd::exp is an out-of-line call on AVX-512, where
// the exp_sigmoid passes (several exps per channel) were measured 7% faster
// with this.
template <class A> inline Vec<A> exp_fp32(const Vec<A> &x_in) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
#if POLA_SIMD_X86
  if constexpr (kLanes<A> == 16) {
    // min/max return their second operand when either is NaN: x's NaN survives.
    const Vec<A> x(_mm512_max_ps(_mm512_set1_ps(-87.0f), _mm512_min_ps(_mm512_set1_ps(89.0f), x_in)));
    const Vec<A> n(_mm512_roundscale_ps(x * Vec<A>(kLog2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const Vec<A> r = xsimd::fma(n, Vec<A>(-kLn2Lo), xsimd::fma(n, Vec<A>(-kLn2Hi), x));
    return Vec<A>(_mm512_scalef_ps(horner<A>(r, kExpTaylor7), n));
  } else
#endif
  {
    using I = xsimd::batch<int32_t, A>;
#if POLA_SIMD_X86
    const Vec<A> x(_mm256_max_ps(_mm256_set1_ps(-87.0f), _mm256_min_ps(_mm256_set1_ps(89.0f), x_in)));
#else
    // NaN in, NaN out: NEON's min/max propagate it.
    const Vec<A> x = xsimd::max(Vec<A>(-87.0f), xsimd::min(Vec<A>(89.0f), x_in));
#endif
    // Rounding by a shifter (as abs_pow): k's low mantissa bits hold n + 126
    // in [1, 254], and shifted into the exponent field they make 2^(n-1), a
    // normal float even for n = 128; the doubling of e^r is exact.
    const Vec<A> shifter(12582912.0f + 126.0f);
    const Vec<A> k = xsimd::fma(x, Vec<A>(kLog2e), shifter);
    const Vec<A> n = k - shifter;
    const Vec<A> r = xsimd::fma(n, Vec<A>(-kLn2Lo), xsimd::fma(n, Vec<A>(-kLn2Hi), x));
    const Vec<A> p = horner<A>(r, kExpTaylor7);
    return (p + p) * xsimd::bitwise_cast<Vec<A>>(xsimd::bitwise_cast<I>(k) << 23);
  }
}

// The sum of v's lanes, by shuffles (xsimd 8's hadd takes a longer route on AVX-512).
template <class A> inline float lane_sum(const Vec<A> &v) {
#if !POLA_SIMD_X86
  return xsimd::hadd(v);
#else
  if constexpr (kLanes<A> == 16) {
    return _mm512_reduce_add_ps(v);
  } else {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
#endif
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
