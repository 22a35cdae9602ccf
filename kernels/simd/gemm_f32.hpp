// The own fp32 GEMM (kernels/gemm_f32.h) as one xsimd template: a register
// tile of M rows x two vectors of columns (one packed panel), its
// accumulators kept in registers over the whole of K. Generic over the arch's
// width (4 floats on neon64, 8 on avx2, 16 on avx512): only xsimd batches and
// plain C++, no ISA intrinsics, so the same source builds for NEON and x86.
// No K blocking: a panel (K x 2 vectors) and M rows of A stream from L1/L2
// for the K of a vision transformer's linear layers (<= a few thousand).
// The plain layout (low-memory mode: W read where the file maps it) packs one
// panel at a time into a per-thread scratch and runs the same tiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "kernels/gemm_f32.h"
#include "kernels/scratch.h"

namespace pola::kernels::simd {

// Panel width: two vectors.
template <class A> constexpr int64_t gemm_f32_nr() { return 2 * int64_t(xsimd::batch<float, A>::size); }

// Rows per register tile: 2 M accumulators + 2 panel vectors + 1 broadcast
// fit the architectural registers (32 on AVX-512 and AArch64, 16 on AVX2).
template <class A> constexpr int gemm_f32_mr() {
  return (xsimd::batch<float, A>::size == 16 || std::is_same<A, xsimd::neon64>::value) ? 8 : 6;
}

namespace gemm_f32_detail {

// A register tile's accumulators, two vectors per row, as nested named
// members rather than an array: GCC 12 for aarch64 keeps an array of batches
// in memory and stores all of it on every step of the K loop, while fields at
// fixed offsets stay in registers. Each row also walks its own pointer along
// A, so a step needs no address arithmetic beyond one increment per row.
// The sums are formed in the same order as before, so the bits are too.
template <class B, int M> struct TileAcc {
  B c0, c1;
  const float *a;
  TileAcc<B, M - 1> next;
};
template <class B> struct TileAcc<B, 0> {};

template <class B, int M> inline void tile_start(TileAcc<B, M> &t, const float *a, int64_t ld_a) {
  if constexpr (M > 0) {
    t.c0 = t.c1 = B(0.f);
    t.a = a;
    tile_start<B, M - 1>(t.next, a + ld_a, ld_a);
  }
}

// One step of K: each row's next a value broadcast, times the panel's two vectors.
template <class B, int M> inline void tile_step(TileAcc<B, M> &t, const B &b0, const B &b1) {
  if constexpr (M > 0) {
    const B ai(*t.a++);
    t.c0 = xsimd::fma(ai, b0, t.c0);
    t.c1 = xsimd::fma(ai, b1, t.c1);
    tile_step<B, M - 1>(t.next, b0, b1);
  }
}

template <class B, int M> inline void tile_unpack(const TileAcc<B, M> &t, B *acc0, B *acc1) {
  if constexpr (M > 0) {
    acc0[0] = t.c0;
    acc1[0] = t.c1;
    tile_unpack<B, M - 1>(t.next, acc0 + 1, acc1 + 1);
  }
}

// Rows [r0, r0 + M) x panel p (`panel`: its K x nr floats).
template <class A, int M> inline void tile(const F32GemmArgs &g, const float *panel, int64_t r0, int64_t p) {
  using B = xsimd::batch<float, A>;
  constexpr int64_t L = B::size, NR = 2 * L;
  const int64_t k = g.layout.k;
  const float *a = g.a + r0 * g.ld_a;
  TileAcc<B, M> t;
  tile_start<B, M>(t, a, g.ld_a);
  for (int64_t q = 0; q < k; ++q)
    tile_step<B, M>(t, B::load_unaligned(panel + q * NR), B::load_unaligned(panel + q * NR + L));
  B acc0[M], acc1[M];
  tile_unpack<B, M>(t, acc0, acc1);
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

template <class A, int M> inline void tile_rows(const F32GemmArgs &g, const float *panel, int64_t r0, int64_t p, int m) {
  if constexpr (M > 0) {
    if (m == M) return tile<A, M>(g, panel, r0, p);
    tile_rows<A, M - 1>(g, panel, r0, p, m);
  }
}

// Panels split over the threads; each thread packs its panel into its
// scratch (K x nr floats) exactly as the packed layout holds it, and runs
// every row block on it: the packed path's bits.
template <class A, int MR> void gemm_f32_plain(const F32GemmArgs &g) {
  constexpr int64_t NR = gemm_f32_nr<A>();
  const int64_t panels = (g.layout.n + NR - 1) / NR, blocks = (g.rows + MR - 1) / MR;
  const int threads = g.threads > 1 ? g.threads : 1;
#pragma omp parallel num_threads(threads) if (threads > 1 && panels > 1)
  {
    // The packer writes every float of the panel, pads included.
    ScratchBuffer panel(size_t(g.layout.k * NR), ScratchBuffer::Uninitialized{});
#pragma omp for schedule(static)
    for (int64_t p = 0; p < panels; ++p) {
      pack_gemm_f32_panel(g.b, F32GemmLayout(g.layout.k, g.layout.n, NR), p, panel.data);
      for (int64_t rb = 0; rb < blocks; ++rb) {
        const int64_t r0 = rb * MR;
        tile_rows<A, MR>(g, panel.data, r0, p, int(std::min<int64_t>(MR, g.rows - r0)));
      }
    }
  }
}

} // namespace gemm_f32_detail

template <class A> void gemm_f32(const F32GemmArgs &g) {
  constexpr int64_t NR = gemm_f32_nr<A>();
  constexpr int MR = gemm_f32_mr<A>();
  if (!g.layout.plain() && g.layout.nr != NR)
    throw std::invalid_argument("gemm_f32: packed panel width does not match the kernel's");
  if (g.rows <= 0 || g.layout.n <= 0) return;
  if (g.layout.plain()) return gemm_f32_detail::gemm_f32_plain<A, MR>(g);
  const int64_t panels = g.layout.panels(), blocks = (g.rows + MR - 1) / MR;
  const int threads = g.threads > 1 ? g.threads : 1;
  // Panel-major: one thread's consecutive tiles reuse the panel from L1.
#pragma omp parallel for collapse(2) num_threads(threads) if (threads > 1 && panels * blocks > 1) schedule(static)
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t rb = 0; rb < blocks; ++rb) {
      const int64_t r0 = rb * MR;
      const int m = int(std::min<int64_t>(MR, g.rows - r0));
      gemm_f32_detail::tile_rows<A, MR>(g, g.b + p * g.layout.k * NR, r0, p, m);
    }
}

} // namespace pola::kernels::simd
