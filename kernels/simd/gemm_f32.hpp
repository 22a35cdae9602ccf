// The own fp32 GEMM (kernels/gemm_f32.h) as one xsimd template: a register
// tile of M rows x two vectors of columns (one packed panel), its
// accumulators kept in registers over the whole of K. Generic over the arch's
// width (4 floats on neon64, 8 on avx2, 16 on avx512): only xsimd batches and
// plain C++, no ISA intrinsics, so the same source builds for NEON and x86.
// No K blocking: a panel (K x 2 vectors) and M rows of A stream from L1/L2
// for the K of a vision transformer's linear layers (<= a few thousand).
// The plain layout (low-memory mode: W read where the file maps it) has its
// own tile, dot products along K reduced across the vector once per output.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "kernels/gemm_f32.h"

namespace pola::kernels::simd {

// Panel width: two vectors.
template <class A> constexpr int64_t gemm_f32_nr() { return 2 * int64_t(xsimd::batch<float, A>::size); }

// Rows per register tile: 2 M accumulators + 2 panel vectors + 1 broadcast
// fit the architectural registers (32 on AVX-512 and AArch64, 16 on AVX2).
template <class A> constexpr int gemm_f32_mr() {
  return (xsimd::batch<float, A>::size == 16 || std::is_same<A, xsimd::neon64>::value) ? 8 : 6;
}

namespace gemm_f32_detail {

// Rows [r0, r0 + M) x panel p.
template <class A, int M> inline void tile(const F32GemmArgs &g, int64_t r0, int64_t p) {
  using B = xsimd::batch<float, A>;
  constexpr int64_t L = B::size, NR = 2 * L;
  const int64_t k = g.layout.k;
  const float *panel = g.b + p * k * NR;
  const float *a = g.a + r0 * g.ld_a;
  B acc0[M], acc1[M];
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = B(0.f);
  for (int64_t q = 0; q < k; ++q) {
    const B b0 = B::load_unaligned(panel + q * NR), b1 = B::load_unaligned(panel + q * NR + L);
    for (int i = 0; i < M; ++i) {
      const B ai(a[i * g.ld_a + q]);
      acc0[i] = xsimd::fma(ai, b0, acc0[i]);
      acc1[i] = xsimd::fma(ai, b1, acc1[i]);
    }
  }
  const int64_t c0 = p * NR, cols = std::min<int64_t>(NR, g.layout.n - c0);
  const float *bias = g.bias ? g.bias + c0 : nullptr;
  if (cols == NR) {
    for (int i = 0; i < M; ++i) {
      float *d = g.dst + (r0 + i) * g.ld_dst + c0;
      B v0 = acc0[i], v1 = acc1[i];
      if (bias) {
        v0 += B::load_unaligned(bias);
        v1 += B::load_unaligned(bias + L);
      }
      if (g.accumulate) {
        v0 += B::load_unaligned(d);
        v1 += B::load_unaligned(d + L);
      }
      v0.store_unaligned(d);
      v1.store_unaligned(d + L);
    }
    return;
  }
  // The last, partial panel: through a buffer, so nothing past column n is touched.
  alignas(64) float buf[NR];
  for (int i = 0; i < M; ++i) {
    float *d = g.dst + (r0 + i) * g.ld_dst + c0;
    acc0[i].store_aligned(buf);
    acc1[i].store_aligned(buf + L);
    for (int64_t c = 0; c < cols; ++c) {
      float v = buf[c];
      if (bias) v += bias[c];
      if (g.accumulate) v += d[c];
      d[c] = v;
    }
  }
}

template <class A, int M> inline void tile_rows(const F32GemmArgs &g, int64_t r0, int64_t p, int m) {
  if constexpr (M > 0) {
    if (m == M) return tile<A, M>(g, r0, p);
    tile_rows<A, M - 1>(g, r0, p, m);
  }
}

// Plain layout: rows [r0, r0 + M) x outputs [c0, c0 + C), each output a dot
// product of an A row and a W row, the vector lanes summed once at the end and
// the K % L tail added after them: a fixed order per output.
template <class A, int M, int C> inline void dot_tile(const F32GemmArgs &g, int64_t r0, int64_t c0) {
  using B = xsimd::batch<float, A>;
  constexpr int64_t L = B::size;
  const int64_t k = g.layout.k, kv = k - k % L;
  const float *a = g.a + r0 * g.ld_a;
  const float *w = g.b + c0 * k;
  B acc[M][C];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < C; ++j) acc[i][j] = B(0.f);
  for (int64_t q = 0; q < kv; q += L) {
    B wv[C];
    for (int j = 0; j < C; ++j) wv[j] = B::load_unaligned(w + j * k + q);
    for (int i = 0; i < M; ++i) {
      const B av = B::load_unaligned(a + i * g.ld_a + q);
      for (int j = 0; j < C; ++j) acc[i][j] = xsimd::fma(av, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < M; ++i) {
    float *d = g.dst + (r0 + i) * g.ld_dst + c0;
    for (int j = 0; j < C; ++j) {
      float v = xsimd::hadd(acc[i][j]);
      for (int64_t q = kv; q < k; ++q) v += a[i * g.ld_a + q] * w[j * k + q];
      if (g.bias) v += g.bias[c0 + j];
      if (g.accumulate) v += d[j];
      d[j] = v;
    }
  }
}

template <class A, int M, int C> inline void dot_tile_cols(const F32GemmArgs &g, int64_t r0, int64_t c0, int c) {
  if constexpr (C > 0) {
    if (c == C) return dot_tile<A, M, C>(g, r0, c0);
    dot_tile_cols<A, M, C - 1>(g, r0, c0, c);
  }
}

template <class A, int M, int C> inline void dot_tile_rows(const F32GemmArgs &g, int64_t r0, int64_t c0, int m, int c) {
  if constexpr (M > 0) {
    if (m == M) return dot_tile_cols<A, M, C>(g, r0, c0, c);
    dot_tile_rows<A, M - 1, C>(g, r0, c0, m, c);
  }
}

// The plain tile's size: M x C accumulators + C W vectors + 1 A vector fit
// the registers (32 on AVX-512 and AArch64: 4 x 4; 16 on AVX2: 3 x 3).
template <class A> constexpr int gemm_f32_plain_tile() { return gemm_f32_mr<A>() == 8 ? 4 : 3; }

template <class A> void gemm_f32_plain(const F32GemmArgs &g) {
  constexpr int T = gemm_f32_plain_tile<A>();
  const int64_t groups = (g.layout.n + T - 1) / T, blocks = (g.rows + T - 1) / T;
  const int threads = g.threads > 1 ? g.threads : 1;
  // Output-group-major: one thread's consecutive tiles reuse the same W rows.
#pragma omp parallel for collapse(2) num_threads(threads) if (threads > 1 && groups * blocks > 1) schedule(static)
  for (int64_t cg = 0; cg < groups; ++cg)
    for (int64_t rb = 0; rb < blocks; ++rb) {
      const int64_t r0 = rb * T, c0 = cg * T;
      dot_tile_rows<A, T, T>(g, r0, c0, int(std::min<int64_t>(T, g.rows - r0)), int(std::min<int64_t>(T, g.layout.n - c0)));
    }
}

} // namespace gemm_f32_detail

template <class A> void gemm_f32(const F32GemmArgs &g) {
  constexpr int64_t NR = gemm_f32_nr<A>();
  constexpr int MR = gemm_f32_mr<A>();
  if (!g.layout.plain() && g.layout.nr != NR)
    throw std::invalid_argument("gemm_f32: packed panel width does not match the kernel's");
  if (g.rows <= 0 || g.layout.n <= 0) return;
  if (g.layout.plain()) return gemm_f32_detail::gemm_f32_plain<A>(g);
  const int64_t panels = g.layout.panels(), blocks = (g.rows + MR - 1) / MR;
  const int threads = g.threads > 1 ? g.threads : 1;
  // Panel-major: one thread's consecutive tiles reuse the panel from L1.
#pragma omp parallel for collapse(2) num_threads(threads) if (threads > 1 && panels * blocks > 1) schedule(static)
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t rb = 0; rb < blocks; ++rb) {
      const int64_t r0 = rb * MR;
      const int m = int(std::min<int64_t>(MR, g.rows - r0));
      gemm_f32_detail::tile_rows<A, MR>(g, r0, p, m);
    }
}

} // namespace pola::kernels::simd
