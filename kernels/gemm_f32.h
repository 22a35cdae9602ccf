// The engine's own fp32 GEMM, for CPUs where oneDNN has no fast fp32 matmul
// (Debian's arm64 oneDNN 2.6 runs reference loops on NEON): dst = post(A W^T
// + bias), A fp32 rows, W a PyTorch (N, K) row-major weight packed once
// (pack_gemm_f32_weights) into column panels. A kernel: it knows nothing of
// models. One xsimd source (kernels/simd/gemm_f32.hpp) for every ISA.
//
// Packed layout: N padded to a multiple of the panel width nr (the ISA's: two
// vectors, gemm_f32_panel_width()); panel p holds columns [nr p, nr p + nr)
// as K rows of nr floats: packed[(p * K + k) * nr + c] = W[nr p + c][k], zero
// past N. K is not padded.
//
// Plain layout (nr == 0, low-memory mode): `b` is W itself, (N, K) row-major
// floats as the model file stores them, read in place: no packed copy of the
// model. The kernel packs one panel at a time into a per-thread scratch (K x
// its panel width) and runs the same tiles on it, so the results equal the
// packed path's bit for bit; the price is that packing on every call.
#pragma once

#include <cstdint>

#include "kernels/isa.h"

namespace pola::kernels {

struct F32GemmLayout {
  int64_t k = 0, n = 0; // the matrix: K inputs, N outputs
  int64_t nr = 0;       // panel width (columns); 0: the plain (N, K) layout
  F32GemmLayout() = default;
  F32GemmLayout(int64_t k_, int64_t n_, int64_t nr_) : k(k_), n(n_), nr(nr_) {}
  static F32GemmLayout plain_weights(int64_t k_, int64_t n_) { return F32GemmLayout(k_, n_, 0); }
  bool plain() const { return nr == 0; }
  int64_t panels() const { return plain() ? 0 : (n + nr - 1) / nr; }
  int64_t packed_elems() const { return panels() * nr * k; } // floats; 0 when plain
};

// Packs W (a panel layout only), PyTorch's (N, K) row-major weight (floats, or bf16 bits when
// w_is_bf16, widened exactly), into `packed` (layout.packed_elems() floats).
void pack_gemm_f32_weights(const void *w, bool w_is_bf16, const F32GemmLayout &layout, float *packed);

// Panel p alone (layout.nr K-rows of nr floats) from W, floats only: what
// pack_gemm_f32_weights writes there. The kernel packs the plain layout's
// panels with it, one at a time, as it goes.
void pack_gemm_f32_panel(const float *w, const F32GemmLayout &layout, int64_t p, float *panel);

// The panel width the kernel of `isa` reads (0: no fp32 GEMM kernel for it).
// The scalar reference reads any width; it is given 8.
int64_t gemm_f32_panel_width(Isa isa);

// dst[r, c] = sum_k a[r, k] W[c, k] + bias[c] (+ dst[r, c] if accumulate), for
// r < rows, c < n. a: rows ld_a floats apart (K valid each); dst: ld_dst
// apart; nothing outside those rows' valid parts is read or written. Sums in
// fp32 over k in one fixed order per output, so any thread count gives the
// same bits. The kernel throws std::invalid_argument if layout.nr is neither
// its panel width nor 0 (plain).
struct F32GemmArgs {
  int64_t rows = 0;
  F32GemmLayout layout;
  const float *a = nullptr; int64_t ld_a = 0;
  const float *b = nullptr;    // packed, or W itself when layout.plain()
  const float *bias = nullptr; // (n) or null
  bool accumulate = false;
  float *dst = nullptr; int64_t ld_dst = 0;
  int threads = 1;
};

namespace reference {
// The same contract in scalar code (double sums) for any panel width or the
// plain layout: the oracle of the tests, registered under Isa::scalar.
void gemm_f32(const F32GemmArgs &args);
} // namespace reference

} // namespace pola::kernels
