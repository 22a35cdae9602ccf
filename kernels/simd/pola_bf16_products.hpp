// The two products of the bf16 polarity core (pola_attention_bf16.hpp), one
// policy per instruction set; the passes around them are the same for both.
// Both products have one shape: C (rows x np fp32, row stride np) = or +=
// A (bf16 rows, row stride lda elements, k in pairs) times B (VNNI rows: pair
// p holds B[2p][c], B[2p + 1][c] for c < np, row stride 2 np):
//   key pass:   KV += phiT (kp channel rows of a block's tokens) . v pairs,
//   query pass: out = q_sim (block rows of kp features) . M pairs.
// Each policy sums the pairs of one output in pair order from its start
// value, so the result depends only on the operands, never on the threads.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/simd/pola_bf16_tiles.hpp"

namespace pola::kernels::simd::bf16_detail {

// AMX-BF16: 32 x 32 blocks of C on the tiles, 32 k (16 pairs) per tile step.
// The tile configuration is per thread: begin() and end() bracket each
// parallel region that calls product().
struct AmxProducts {
  POLA_BF16_TARGET static void begin() { configure_tiles(); }
  POLA_BF16_TARGET static void end() { release_tiles(); }
  POLA_BF16_TARGET static void product(const uint16_t *a, int64_t lda, const uint16_t *b, int64_t np, int64_t rows,
                                       int64_t pairs, float *c, bool zero) {
    for (int64_t r = 0; r < rows; r += 32)
      for (int64_t col = 0; col < np; col += 32)
        gemm_32x32(a + r * lda, lda * 2, b + col * 2, np * 4, int(pairs / 16), c + r * np + col, np * 4, zero);
  }
};

// AVX512-BF16: vdpbf16ps (each fp32 lane += a.pair . b.pair) in register
// blocks of kRows rows x 32 columns: 16 accumulators, per pair two B loads
// shared by the rows and one broadcast A pair per row. (4 rows x 64 columns,
// the same loads per product, measured no faster: bench/attention/README.md.)
struct DotProducts {
  static constexpr int kRows = 8;
  static void begin() {}
  static void end() {}

  POLA_BF16_TARGET static void block(const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                                     int64_t pairs, float *c, int64_t ldc, bool zero) {
    constexpr int R = kRows, CV = 2;
    __m512 acc[R][CV];
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < CV; ++v) acc[i][v] = zero ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16 * v);
    // Fully unrolled over the block (GCC otherwise splits the column loop
    // and keeps the accumulators on the stack).
    for (int64_t p = 0; p < pairs; ++p) {
      __m512bh bv[CV];
#pragma GCC unroll 8
      for (int v = 0; v < CV; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + p * ldb + 32 * v);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        uint32_t pair;
        std::memcpy(&pair, a + i * lda + 2 * p, sizeof pair);
        const __m512bh av = (__m512bh)_mm512_set1_epi32(int(pair));
#pragma GCC unroll 8
        for (int v = 0; v < CV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, bv[v]);
      }
    }
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < CV; ++v) _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
  }

  POLA_BF16_TARGET static void product(const uint16_t *a, int64_t lda, const uint16_t *b, int64_t np, int64_t rows,
                                       int64_t pairs, float *c, bool zero) {
    for (int64_t r = 0; r < rows; r += kRows)
      for (int64_t col = 0; col < np; col += 32)
        block(a + r * lda, lda, b + col * 2, 2 * np, pairs, c + r * np + col, np, zero);
  }
};

} // namespace pola::kernels::simd::bf16_detail
