// AMX-BF16 building blocks of the bf16 polarity core (pola_attention_bf16.hpp):
// the tile configuration, a 2 x 2 tile GEMM step, bf16 packing and a 16 x 16
// fp32 transpose. Included only by kernels/isa/amx_bf16.cpp and
// avx512_bf16.cpp; every function that uses bf16 or AMX instructions carries
// POLA_BF16_TARGET, so the shared xsimd templates of those files are compiled
// with exactly the avx512 table's flags (no inline copy of them can carry an
// instruction a CPU without AMX lacks). The attribute allows tile
// instructions but emits none by itself: the AVX512-BF16 core's functions
// carry it too (they call the shared helpers here) and use no tile.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/common.hpp"

#define POLA_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,avx512bf16,amx-tile,amx-bf16")))

namespace pola::kernels::simd::bf16_detail {

using A = xsimd::avx512f;
using V = Vec<A>;

// Every tile is 16 rows x 64 bytes: C tiles of 16 x 16 fp32, A tiles of
// 16 rows x 32 bf16 (one k step), B tiles of 16 VNNI rows (32 k x 16 columns).
// Tiles 0-3 accumulate a 2 x 2 block of C, 4-5 hold A, 6-7 hold B.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// The tile configuration is per thread: call at the start of each parallel
// region that uses tiles, and release_tiles() before it ends.
POLA_BF16_TARGET inline void configure_tiles() {
  TileConfig c;
  for (int i = 0; i < 8; ++i) {
    c.colsb[i] = 64;
    c.rows[i] = 16;
  }
  _tile_loadconfig(&c);
}
POLA_BF16_TARGET inline void release_tiles() { _tile_release(); }

// Tile loads are asm without a memory operand: this keeps the compiler from
// sinking the vector stores that filled a buffer below the tile loads.
inline void memory_barrier() { __asm__ volatile("" ::: "memory"); }

// A 32 x 32 block of C (fp32, row stride ldc bytes) += sum over ksteps of
// A (32 rows x 32 bf16 per step, row stride lda bytes, steps 64 bytes apart)
// times B (VNNI: 16 rows of 32 column pairs per step, row stride ldb bytes,
// steps 16 rows apart, the second 16 columns 64 bytes on). C starts from
// memory, or from zero when `zero` is set. If `prefetch` is set, step s also
// asks for the 2 KB at prefetch + 2048 s to be brought into L2 (the next
// B panel of a GEMM that streams its weights: the loads then overlap the products).
// If `c_init` is set, C starts from there instead (row stride ldc_init bytes;
// 0 repeats one row: a bias) and only the result goes to c.
// RowTiles = 1 is the same for a block of at most 16 rows: the upper two C
// tiles only, half the products (gemm_16x32).
template <int RowTiles = 2>
POLA_BF16_TARGET inline void gemm_rows_x32(const void *a, int64_t lda, const void *b, int64_t ldb, int ksteps,
                                           float *c, int64_t ldc, bool zero, const char *prefetch = nullptr,
                                           const float *c_init = nullptr, int64_t ldc_init = 0) {
  static_assert(RowTiles == 1 || RowTiles == 2, "a block is one or two 16-row tiles high");
  const char *pa = static_cast<const char *>(a), *pb = static_cast<const char *>(b);
  char *pc = reinterpret_cast<char *>(c);
  if (zero) {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (RowTiles == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
  } else {
    const char *pi = c_init ? reinterpret_cast<const char *>(c_init) : pc;
    const int64_t ldi = c_init ? ldc_init : ldc;
    _tile_loadd(0, pi, ldi);
    _tile_loadd(1, pi + 64, ldi);
    if constexpr (RowTiles == 2) {
      _tile_loadd(2, pi + 16 * ldi, ldi);
      _tile_loadd(3, pi + 16 * ldi + 64, ldi);
    }
  }
  // Each load sits right before the first product that needs it (tiles are
  // not renamed: a load waits for the products still reading its tile, so
  // four loads up front would hold back the whole step).
  for (int s = 0; s < ksteps; ++s) {
    _tile_loadd(4, pa + s * 64, lda);
    _tile_loadd(6, pb + s * 16 * ldb, ldb);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, pb + s * 16 * ldb + 64, ldb);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (RowTiles == 2) {
      _tile_loadd(5, pa + 16 * lda + s * 64, lda);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    if (prefetch)
      for (int line = 0; line < 32; ++line) _mm_prefetch(prefetch + s * 2048 + line * 64, _MM_HINT_T1);
  }
  _tile_stored(0, pc, ldc);
  _tile_stored(1, pc + 64, ldc);
  if constexpr (RowTiles == 2) {
    _tile_stored(2, pc + 16 * ldc, ldc);
    _tile_stored(3, pc + 16 * ldc + 64, ldc);
  }
}

POLA_BF16_TARGET inline void gemm_32x32(const void *a, int64_t lda, const void *b, int64_t ldb, int ksteps,
                                        float *c, int64_t ldc, bool zero, const char *prefetch = nullptr,
                                        const float *c_init = nullptr, int64_t ldc_init = 0) {
  gemm_rows_x32<2>(a, lda, b, ldb, ksteps, c, ldc, zero, prefetch, c_init, ldc_init);
}

// 16 floats to bf16, rounded to nearest even.
POLA_BF16_TARGET inline __m256i to_bf16x16(__m512 x) { return (__m256i)_mm512_cvtneps_pbh(x); }

// VNNI row of two k rows: dst[2c] = bf16(r0[c]), dst[2c + 1] = bf16(r1[c]) for 16 columns.
POLA_BF16_TARGET inline void store_pair(__m512 r0, __m512 r1, uint16_t *dst) {
  alignas(64) static constexpr uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,
                                                            21, 6, 22, 7, 23, 8,  24, 9,  25, 10, 26,
                                                            11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(r1, r0); // r0 in words 0-15, r1 in 16-31
  _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), both));
}

// In-register transpose of 16 x 16 floats: r[i] lane j becomes r[j] lane i.
POLA_BF16_TARGET inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // r[4i + k], 128-bit lane L: column 4L + k of rows 4i..4i+3.
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // Then a 4 x 4 transpose of 128-bit blocks among r[k], r[4+k], r[8+k], r[12+k].
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
    t[4 + k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xdd);
    t[8 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
    t[12 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xdd);
  }
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);
    r[4 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0xdd);
  }
}

// Lane sums of 16 vectors at once: lane i of the result = the sum of v[i]'s
// 16 lanes. A tree of pairwise shuffles and adds (45 operations) instead of 16
// horizontal sums (~8 each): within 128-bit lanes first, then across them.
POLA_BF16_TARGET inline __m512 lane_sums16(const __m512 (&v)[16]) {
  __m512 w[8], z[4];
  for (int k = 0; k < 8; ++k) // 128-bit lane L of w[k]: [a0+a2, b0+b2, a1+a3, b1+b3] of a = v[2k], b = v[2k+1]
    w[k] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * k], v[2 * k + 1]), _mm512_unpackhi_ps(v[2 * k], v[2 * k + 1]));
  for (int k = 0; k < 4; ++k) // slot j of each 128-bit lane of z[k]: that lane's 4-sum of v[4k + j]
    z[k] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Pairs of 128-bit lanes, then the remaining pairs: 128-bit lane k ends with z[k]'s total.
  const __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(z[0], z[1], 0x88), _mm512_shuffle_f32x4(z[0], z[1], 0xdd));
  const __m512 s23 = _mm512_add_ps(_mm512_shuffle_f32x4(z[2], z[3], 0x88), _mm512_shuffle_f32x4(z[2], z[3], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88), _mm512_shuffle_f32x4(s01, s23, 0xdd));
}

// Widest head the bf16 core takes: the row buffers of build_query_state and
// the column masks of query_block (wider heads go to the fp32 core).
constexpr int kMaxHeadDim = 128;

// Padded sizes of one head for the tile products.
struct Bf16Layout {
  int d, half;
  int64_t kp;     // 2d padded to 32: rows of KV (pos rows [0, d), neg rows [d, 2d)), k of the query product
  int64_t np;     // d padded to 32: columns of KV, M and the query product's output
  int64_t state;  // floats of one head's chunk state: KV (kp x np) + ksum (kp)
  int64_t qstate; // floats of one head's query state: M as bf16 VNNI (kp x np halves) + kmean (kp)
  explicit Bf16Layout(int head_dim)
      : d(head_dim), half(head_dim / 2), kp((2 * int64_t(head_dim) + 31) / 32 * 32),
        np((int64_t(head_dim) + 31) / 32 * 32), state(kp * np + kp), qstate(kp * np / 2 + kp) {}
};

} // namespace pola::kernels::simd::bf16_detail
