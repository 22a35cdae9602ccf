// The engine's hand-written kernels: ISA-agnostic declarations.
//
// Every kernel here has one scalar reference (kernels/reference/) and one xsimd
// template compiled per ISA (kernels/isa/). The table of the ISA chosen at
// start-up is returned by active(); a kernel knows nothing about models.
#pragma once

#include <cstdint>

namespace pola::kernels {

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

const char *isa_name(Isa isa);
// The ISA isa_name() calls `name` (scalar, avx2, avx512); false if none is.
bool isa_from_name(const char *name, Isa &isa);

// Polarity-aware linear attention core (SPEC section 3, steps 2-7), for one
// sequence. Inputs are token-major with per-row strides (ld_*), head h owns
// channels [h*head_dim, (h+1)*head_dim). The key side streams over n_k tokens
// once; the query side streams over n_q tokens once; nothing of size n_q x n_k
// exists. `out` receives [x_sim, x_opp] per head (head_dim wide).
// An output of at least kPolaStreamOutBytes (n_q * ld_out floats) whose rows
// and heads are vector-aligned is written with non-temporal stores: it
// bypasses the caches, so a caller that reads it right back pays a DRAM trip.
inline constexpr double kPolaStreamOutBytes = 64.0 * (1 << 20);
struct PolaAttnArgs {
  int64_t n_q = 0, n_k = 0;
  int heads = 0, head_dim = 0;
  const float *q = nullptr; int64_t ld_q = 0;
  const float *k = nullptr; int64_t ld_k = 0;
  const float *v = nullptr; int64_t ld_v = 0;
  const float *pos_enc = nullptr;   // (n_k, heads*head_dim) dense, added to k; may be null
  const float *inv_scale = nullptr; // (heads*head_dim): 1 / softplus(scale)
  const float *power = nullptr;     // (heads*head_dim): 1 + alpha * sigmoid(power_param)
  float *out = nullptr; int64_t ld_out = 0;
  int threads = 1;                  // worker threads the call may use (deterministic for any value)
};

// Swin window attention with softmax (SPEC section 5, "S" blocks), for a batch
// of windows that share one relative-position bias. qkv rows are
// [q | k | v] (3*heads*head_dim wide, stride ld_qkv) in window-major token
// order: window w owns rows [w*t, (w+1)*t) with t tokens per window.
// bias: (heads, t, t) dense. mask: (n_mask, t, t) or null; window w uses
// mask[w % n_mask]. Output rows are heads*head_dim wide (stride ld_out).
struct WindowAttnArgs {
  int64_t windows = 0; int tokens = 0;
  int heads = 0, head_dim = 0;
  float scale = 1.0f;
  const float *qkv = nullptr; int64_t ld_qkv = 0;
  const float *bias = nullptr;
  const float *mask = nullptr; int64_t n_mask = 0;
  float *out = nullptr; int64_t ld_out = 0;
  int threads = 1;
};

// The function table of one ISA.
struct KernelTable {
  Isa isa;
  // y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma + beta, biased variance.
  void (*layernorm)(const float *x, int64_t ld_x, float *y, int64_t ld_y, int64_t rows,
                    int64_t cols, const float *gamma, const float *beta, float eps, int threads);
  // x = 0.5 x (1 + erf(x / sqrt 2)), in place (exact GELU).
  void (*gelu)(float *x, int64_t n, int threads);
  // y[r, c] *= g[r, c] (strided rows): the PolaFormer gate.
  void (*mul_rows)(float *y, int64_t ld_y, const float *g, int64_t ld_g, int64_t rows,
                   int64_t cols, int threads);
  void (*pola_attention)(const PolaAttnArgs &args);
  void (*window_attention)(const WindowAttnArgs &args);
  // y[r, c] = bf16(x[r, c]) rounded to nearest even (NaN stays NaN): the
  // source rows of a bf16 GEMM. y holds the upper 16 bits of each float.
  void (*to_bf16)(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                  int threads);
  // layernorm's values rounded to bf16 (nearest even), bit for bit
  // to_bf16(layernorm(x)) of the same table: LayerNorm feeding a bf16 GEMM.
  void (*layernorm_bf16)(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                         const float *gamma, const float *beta, float eps, int threads);
  // y[r, c] = bf16(gelu(x[r, c])) (nearest even), bit for bit to_bf16 of the
  // same table's gelu: the hidden rows of a bf16 MLP, GELU'd and rounded in
  // one pass while they are in cache.
  void (*gelu_bf16)(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                    int threads);
  // y[i] = |u[i]|^p[i], 0 where |u[i]| < FLT_MIN: the polarity core's feature
  // map (simd::abs_pow), here so its accuracy can be tested on each ISA.
  void (*abs_pow)(const float *u, const float *p, float *y, int64_t n);
};

// The table for the best ISA this CPU and OS support, or the one forced by
// POLA_ISA=scalar|avx2|avx512|avx512_bf16|amx_bf16 (an unsupported forced ISA
// is an error printed once, and the best supported one is used; the two bf16
// names use the avx512 table). Chosen once, thread-safe.
const KernelTable &active();

// Native bf16 matrix instructions, used by the GEMMs (oneDNN), not by this
// table: AVX512-BF16 (vdpbf16ps, two bf16 products per fp32 lane) and
// AMX-BF16 (tile matrix units; Xeon 4th gen and later). A forced POLA_ISA
// caps this too, so that a CPU without them can be emulated:
// scalar|avx2|avx512 -> none, avx512_bf16 -> at most avx512_bf16.
enum class Bf16Isa { none = 0, avx512_bf16 = 1, amx_bf16 = 2 };
const char *bf16_isa_name(Bf16Isa isa); // "none", "AVX512-BF16", "AMX-BF16"
Bf16Isa cpu_bf16_isa();    // what this CPU and OS support
Bf16Isa active_bf16_isa(); // the same after the POLA_ISA cap
// The POLA_ISA value in force (a known name this machine supports), or
// nullptr when the best ISA is used; what the oneDNN ISA cap follows.
const char *forced_isa();

// ---- bf16 polarity core ----
// pola_attention with its two products (KV = phi_k^T v, q_sim @ M) in bf16
// with fp32 accumulation, on AMX-BF16 tiles where AMX is active, else on
// AVX512-BF16 dot products (vdpbf16ps); the feature maps (computed in
// fp32 to 1.2e-4 relative, as they are rounded to bf16 next), ksum, kmean,
// denominators and normalisation stay fp32, inputs and outputs are fp32.
// Same arguments and thread-count determinism as pola_attention; heads wider
// than 128 channels run the fp32 core. nullptr when neither is active (the
// CPU or OS lacks them, POLA_ISA caps them, or, with AMX, Linux refused the
// tile state): callers then use active().pola_attention.
using PolaAttnFn = void (*)(const PolaAttnArgs &args);
PolaAttnFn pola_attention_bf16();
// The bf16 core on one instruction set (amx_bf16 or avx512_bf16) if this CPU
// and OS have it, whatever POLA_ISA says, else nullptr: lets a test check
// both cores in one process on an AMX CPU.
PolaAttnFn pola_attention_bf16_on(Bf16Isa isa);

// ---- bf16 window attention ----
// window_attention with its two products (q k^T, softmax weights @ v) in
// bf16 with fp32 accumulation, on AVX512-BF16 dot products; scale, bias,
// mask, the softmax and 1 / sum stay fp32, and each output row is a convex
// combination of the bf16-rounded values (weights rounded, then summed).
// Heads whose width is not a multiple of 32, and windows of more than 256
// tokens, run the fp32 kernel. nullptr unless AVX512-BF16 is the active bf16
// ISA: with AMX active the fp32 kernel runs (a tile version is not written),
// and without either there is nothing to run it on.
using WindowAttnFn = void (*)(const WindowAttnArgs &args);
WindowAttnFn window_attention_bf16();
// The same on AVX512-BF16 whenever this CPU and OS have it, whatever
// POLA_ISA says (for tests), else nullptr.
WindowAttnFn window_attention_bf16_dot();

// A specific ISA's table, or nullptr if this machine (CPU + OS) cannot run it.
const KernelTable *table_for(Isa isa);

// Whether the CPU and the OS (XCR0 state) support an ISA.
bool cpu_supports(Isa isa);

} // namespace pola::kernels
