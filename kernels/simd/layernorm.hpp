// LayerNorm over rows in fp32: two passes (mean, then centred squares), each
// with several independent vector accumulators, so large row offsets do not
// cancel and the error stays near the double-precision reference.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/simd/common.hpp"
#include "kernels/simd/to_bf16.hpp"

namespace pola::kernels::simd {

namespace layernorm_detail {
// Sum of f(x[c]) over a row with 4 accumulators; the tail is zero-filled by
// load_first, and f must map those zero pads to zero.
template <class A, class F> inline float row_sum(const float *x, int64_t cols, F f) {
  constexpr int L = kLanes<A>;
  Vec<A> acc[4] = {Vec<A>(0.0f), Vec<A>(0.0f), Vec<A>(0.0f), Vec<A>(0.0f)};
  int64_t c = 0;
  for (; c + 4 * L <= cols; c += 4 * L)
    for (int i = 0; i < 4; ++i) acc[i] += f(Vec<A>::load_unaligned(x + c + i * L), c + i * L);
  for (; c < cols; c += L) acc[0] += f(load_first<A>(x + c, int(cols - c)), c);
  return xsimd::hadd((acc[0] + acc[1]) + (acc[2] + acc[3]));
}
} // namespace layernorm_detail

namespace layernorm_detail {
// The rows' LayerNorm; `emit(xr, yr, vmean, rstd)` writes output row yr from
// input row xr, its mean and 1 / std, so that the fp32 and the bf16 outputs
// share every operation before the store.
template <class A, class Y, class Emit>
void layernorm_rows(const float *x, int64_t ld_x, Y *y, int64_t ld_y, int64_t rows, int64_t cols, float eps,
                    int threads, Emit emit) {
  constexpr int L = kLanes<A>;
  alignas(64) float lane_index[L];
  for (int i = 0; i < L; ++i) lane_index[i] = float(i);
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) if (threads > 1 && rows > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * ld_x;
    const float mean = row_sum<A>(xr, cols, [](const Vec<A> &v, int64_t) { return v; }) / float(cols);
    const Vec<A> vmean(mean), lanes = Vec<A>::load_aligned(lane_index);
    // Pads past cols load as 0 and would add mean^2: mask them out.
    const float var = row_sum<A>(xr, cols, [&](const Vec<A> &v, int64_t c) {
                        const Vec<A> dlt = xsimd::select(lanes + Vec<A>(float(c)) < Vec<A>(float(cols)),
                                                         v - vmean, Vec<A>(0.0f));
                        return dlt * dlt;
                      }) / float(cols);
    emit(xr, y + r * ld_y, vmean, Vec<A>(1.0f / std::sqrt(var + eps)));
  }
}

// Columns [c, c + n) of one output row, n <= lanes, in fp32.
template <class A>
inline Vec<A> normed(const float *xr, int64_t c, int n, const Vec<A> &vmean, const Vec<A> &rstd, const float *gamma,
                     const float *beta) {
  const Vec<A> v = (load_first<A>(xr + c, n) - vmean) * rstd;
  return xsimd::fma(v, load_first<A>(gamma + c, n), load_first<A>(beta + c, n));
}
} // namespace layernorm_detail

namespace layernorm_detail {
// The output row's store: fp32 as is, or bf16 rounded to nearest even.
template <class A> inline void store_out(float *y, const Vec<A> &v, int n) { store_first<A>(y, v, n); }
template <class A> inline void store_out(uint16_t *y, const Vec<A> &v, int n) { store_bf16<A>(y, v, n); }

template <class A, class Y>
void layernorm_to(const float *x, int64_t ld_x, Y *y, int64_t ld_y, int64_t rows, int64_t cols, const float *gamma,
                  const float *beta, float eps, int threads) {
  constexpr int L = kLanes<A>;
  layernorm_rows<A>(x, ld_x, y, ld_y, rows, cols, eps, threads,
                    [&](const float *xr, Y *yr, const Vec<A> &vmean, const Vec<A> &rstd) {
                      for (int64_t c = 0; c < cols; c += L) {
                        const int n = int(cols - c < L ? cols - c : L);
                        store_out<A>(yr + c, normed<A>(xr, c, n, vmean, rstd, gamma, beta), n);
                      }
                    });
}
} // namespace layernorm_detail

template <class A>
void layernorm(const float *x, int64_t ld_x, float *y, int64_t ld_y, int64_t rows, int64_t cols,
               const float *gamma, const float *beta, float eps, int threads) {
  layernorm_detail::layernorm_to<A>(x, ld_x, y, ld_y, rows, cols, gamma, beta, eps, threads);
}

// The same values rounded to bf16 (nearest even): bit for bit to_bf16(layernorm(x)).
template <class A>
void layernorm_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                    const float *gamma, const float *beta, float eps, int threads) {
  layernorm_detail::layernorm_to<A>(x, ld_x, y, ld_y, rows, cols, gamma, beta, eps, threads);
}

} // namespace pola::kernels::simd
