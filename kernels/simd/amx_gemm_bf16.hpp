// The AMX-BF16 GEMM of kernels/gemm_bf16.h. Included only by
// kernels/isa/amx_bf16.cpp (tile configuration, the 2 x 2 tile step and the
// bf16 conversion come from pola_bf16_tiles.hpp).
//
// Blocking: C is computed in 32 x 32 blocks over the full K in tiles (one
// pass, so every output sums its k in one order whatever the threads). The
// rows are cut in chunks whose bf16 A rows stay in L2 (kGemmChunkBytes); one work
// item is (chunk, 32-column panel of B), and the items are split among the
// threads in contiguous ranges, panel-minor: at the batch-1 shapes (one chunk)
// each thread streams its own panels of B from memory exactly once while A
// stays in its L2. Blocks with ragged rows, or any block when K is not a
// multiple of 32, are copied once per chunk into zero-padded scratch (a tile
// load reads 32 rows x 32 k); full blocks are loaded straight from A.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_bf16.h"
#include "kernels/scratch.h"
#include "kernels/simd/pola_bf16_tiles.hpp"

namespace pola::kernels::simd::bf16_detail {

// A chunk of A rows of at most this many bytes stays in L2 (2 MB per core on
// the AMX Xeons) next to the B panel being read.
constexpr int64_t kGemmChunkBytes = 1 << 20;

// gemm_32x32 (pola_bf16_tiles.hpp) for a block of at most 16 rows, from zero.
POLA_BF16_TARGET inline void gemm_16x32(const void *a, int64_t lda, const void *b, int64_t ldb, int ksteps, float *c,
                                        int64_t ldc, const char *prefetch) {
  gemm_rows_x32<1>(a, lda, b, ldb, ksteps, c, ldc, true, prefetch);
}

// Bias, residual and the store of one row of a 32-column block.
POLA_BF16_TARGET inline void gemm_epilogue_row(const float *c, const Bf16GemmArgs &g, int64_t r, int64_t n0,
                                               int64_t cols) {
  for (int h = 0; h < 2 && 16 * h < cols; ++h) {
    const int64_t valid = std::min<int64_t>(16, cols - 16 * h), col = n0 + 16 * h;
    const __mmask16 mask = valid == 16 ? __mmask16(0xffff) : __mmask16((1u << valid) - 1);
    __m512 v = _mm512_loadu_ps(c + 16 * h);
    if (g.bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, g.bias + col));
    if (g.dst_bf16) {
      _mm256_mask_storeu_epi16(static_cast<uint16_t *>(g.dst) + r * g.ld_dst + col, mask, to_bf16x16(v));
    } else {
      float *d = static_cast<float *>(g.dst) + r * g.ld_dst + col;
      if (g.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, d));
      _mm512_mask_storeu_ps(d, mask, v);
    }
  }
}

// Block mb of A (32 rows from row 32 mb) as zero-padded 32 x kp bf16 rows.
inline void gemm_pack_a_block(const Bf16GemmArgs &g, int64_t mb, uint16_t *dst) {
  const int64_t kp = g.layout.kp, k = g.layout.k;
  for (int64_t r = 0; r < 32; ++r) {
    const int64_t row = 32 * mb + r;
    uint16_t *d = dst + r * kp;
    const int64_t copied = row < g.rows ? k : 0;
    if (copied) std::memcpy(d, g.a + row * g.ld_a, static_cast<size_t>(copied) * 2);
    std::memset(d + copied, 0, static_cast<size_t>(kp - copied) * 2);
  }
}

POLA_BF16_TARGET inline void gemm_bf16(const Bf16GemmArgs &g) {
  const Bf16GemmLayout &l = g.layout;
  if (g.rows <= 0 || l.n <= 0) return;
  const int64_t m_blocks = (g.rows + 31) / 32, panels = l.np / 32, ksteps = l.kp / 32;
  const int64_t block_bytes = 32 * l.kp * 2;
  const int threads = std::max(1, g.threads);
  // Enough chunks for the A rows to fit L2, and for about 4 items per thread
  // when the panels alone are too few to share.
  int64_t chunks = std::max<int64_t>((m_blocks * block_bytes + kGemmChunkBytes - 1) / kGemmChunkBytes,
                                     (4 * threads + panels - 1) / panels);
  chunks = std::min(chunks, m_blocks);
  // When all of B fits in L2 next to A's rows, the order turns row-major (one
  // 32-row block per chunk): each block's A stays in L1 while the panels pass,
  // and dst is written row by row (whole cache lines in sequence, which the
  // prefetchers follow) instead of in 128-byte strips down every row.
  const bool stream_b = l.kp * l.np * 2 > kGemmChunkBytes;
  if (!stream_b) chunks = m_blocks;
  const int64_t chunk = (m_blocks + chunks - 1) / chunks;
  chunks = (m_blocks + chunk - 1) / chunk;
  const int64_t items = chunks * panels;
  const bool pack_all = l.k % 32 != 0;
  const bool plain_out = !g.accumulate && !g.dst_bf16; // fp32 dst = A B + bias
  const int team = static_cast<int>(std::min<int64_t>(threads, items));
#pragma omp parallel num_threads(team) if (team > 1)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = items * t / nt, end = items * (t + 1) / nt;
    if (begin < end) {
      ScratchBuffer cbuf(32 * 32);
      ScratchBuffer apack(static_cast<size_t>(chunk * block_bytes / 4));
      auto *a_packed = reinterpret_cast<uint16_t *>(apack.data);
      configure_tiles();
      int64_t packed_chunk = -1;
      for (int64_t i = begin; i < end; ++i) {
        const int64_t ch = i / panels, p = i % panels;
        const int64_t mb0 = ch * chunk, mb1 = std::min(m_blocks, mb0 + chunk);
        if (ch != packed_chunk) {
          for (int64_t mb = mb0; mb < mb1; ++mb)
            if (pack_all || 32 * (mb + 1) > g.rows) gemm_pack_a_block(g, mb, a_packed + (mb - mb0) * 32 * l.kp);
          packed_chunk = ch;
        }
        const uint16_t *b = g.b + p * (l.kp / 2) * 64;
        const int64_t cols = std::min<int64_t>(32, l.n - 32 * p);
        for (int64_t mb = mb0; mb < mb1; ++mb) {
          const int64_t rows = std::min<int64_t>(32, g.rows - 32 * mb);
          const bool direct = rows == 32 && !pack_all;
          const uint16_t *a = direct ? g.a + 32 * mb * g.ld_a : a_packed + (mb - mb0) * 32 * l.kp;
          memory_barrier();
          // Panel-major order streams B from L3 or memory: the chunk's first
          // block asks for the next panel this thread needs, a panel ahead.
          const char *pf = stream_b && mb == mb0 && i + 1 < end && (i + 1) / panels == ch
                               ? reinterpret_cast<const char *>(b + (l.kp / 2) * 64)
                               : nullptr;
          const int64_t lda = (direct ? g.ld_a : l.kp) * 2;
          if (plain_out && rows == 32 && cols == 32) {
            // Straight into dst, C starting from the bias row: no round trip
            // through cbuf (a read right after a tile store stalls).
            float *d = static_cast<float *>(g.dst) + 32 * mb * g.ld_dst + 32 * p;
            gemm_32x32(a, lda, b, 128, static_cast<int>(ksteps), d, g.ld_dst * 4, !g.bias, pf,
                       g.bias ? g.bias + 32 * p : nullptr, 0);
            continue;
          }
          if (rows <= 16) gemm_16x32(a, lda, b, 128, static_cast<int>(ksteps), cbuf.data, 128, pf);
          else gemm_32x32(a, lda, b, 128, static_cast<int>(ksteps), cbuf.data, 128, true, pf);
          memory_barrier();
          for (int64_t r = 0; r < rows; ++r) gemm_epilogue_row(cbuf.data + r * 32, g, 32 * mb + r, 32 * p, cols);
        }
      }
      release_tiles();
    }
  }
}

} // namespace pola::kernels::simd::bf16_detail
