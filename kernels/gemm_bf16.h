// A bf16 GEMM with fp32 accumulation on AMX-BF16 tiles, for the engine's
// linear layers: dst = epilogue(A B + bias), where A is bf16 rows and B is a
// weight matrix pre-tiled once (pack_gemm_bf16_weights) into the layout the
// tile unit reads. A kernel: it knows nothing of models.
//
// Packed layout: N padded to 32 columns (panels of 32), K padded to 32. Panel
// p holds columns [32p, 32p + 32) as kp/2 rows of 32 (k, k+1) pairs:
// packed[(p * kp/2 + kk) * 64 + 2c + j] = W[32p + c][2kk + j], zero outside
// the matrix. One 32-column panel row is 128 bytes: the two 16-column VNNI
// B tiles of one k step sit side by side, 16 panel rows per step.
#pragma once

#include <cstdint>

namespace pola::kernels {

struct Bf16GemmLayout {
  int64_t k = 0, n = 0;   // the matrix: K inputs, N outputs
  int64_t kp = 0, np = 0; // both padded to 32
  Bf16GemmLayout() = default;
  Bf16GemmLayout(int64_t k_, int64_t n_) : k(k_), n(n_), kp((k_ + 31) / 32 * 32), np((n_ + 31) / 32 * 32) {}
  int64_t packed_elems() const { return kp * np; } // bf16 values
};

// Packs W, given as PyTorch's (N, K) row-major weight (float, or bf16 bits when
// w_is_bf16), into `packed` (layout.packed_elems() values). Floats are rounded
// to bf16 to nearest even, as the GEMMs' other inputs are.
void pack_gemm_bf16_weights(const void *w, bool w_is_bf16, const Bf16GemmLayout &layout, uint16_t *packed);

// dst[r, c] = post(sum_k a[r, k] * W[c, k] + bias[c]) for r < rows, c < n, with
//   post(v) = v + dst[r, c] (fp32 dst) if accumulate, stored as fp32, or as
//   bf16 rounded to nearest even if dst_bf16 (not with accumulate). GELU is
//   not an epilogue: the engine runs its own GELU kernel over the result.
// a: bf16 rows (ld_a elements apart, K valid values each); dst: ld_dst elements.
// Products are exact, sums are fp32. Deterministic for any thread count: every
// output is summed over k in one fixed order, whichever thread owns it.
struct Bf16GemmArgs {
  int64_t rows = 0;
  Bf16GemmLayout layout;
  const uint16_t *a = nullptr; int64_t ld_a = 0;
  const uint16_t *b = nullptr; // packed
  const float *bias = nullptr; // (n) or null
  bool accumulate = false, dst_bf16 = false;
  void *dst = nullptr; int64_t ld_dst = 0;
  int threads = 1;
};
// The kernel: resolve<Op::gemm, DType::bf16>() (registry.h), which finds
// none without AMX-BF16 (the GEMMs are then oneDNN's).

namespace reference {
// The same contract in scalar code (double sums): the oracle of the tests,
// registered under Isa::scalar.
void gemm_bf16(const Bf16GemmArgs &args);
} // namespace reference

} // namespace pola::kernels
