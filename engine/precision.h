// The arithmetic precision of one op (a field of each graph node, chosen per
// op kind when a plan is built), and how a user's `--precision` request
// becomes one. Only the GEMMs (linear layers, patch embeddings) and the
// products of the attention (polarity core, softmax windows) run in bf16; LayerNorm, softmax,
// GELU, the polarity feature maps, normalisers and residual sums stay fp32.
// In int8 the linear layers a quantized model file holds in int8 (`pola
// quantize`) multiply int8 rows by int8 weights; everything else runs fp32.
#pragma once

#include <string>

namespace pola {

enum class Precision { fp32, bf16, int8 };
const char *precision_name(Precision p); // "fp32" / "bf16" / "int8"

// What the user asks for: fp32 (the default: exact parity), bf16, int8 (a
// quantized model file only), or auto = int8 for a quantized file on a CPU
// with int8 dot products, else bf16 where it is faster than fp32
// (bf16_speed()), else fp32.
enum class PrecisionRequest { fp32, bf16, automatic, int8 };
// "fp32" | "bf16" | "int8" | "auto"; false for anything else.
bool precision_request_from_name(const std::string &name, PrecisionRequest &out);

struct PrecisionChoice {
  Precision precision = Precision::fp32;
  std::string reason; // e.g. "this CPU has AMX-BF16"
};
// The precision a request runs at on this CPU (after any POLA_ISA cap).
// An explicit bf16 without AVX512-BF16 or AMX-BF16 throws InputError naming
// what is missing.
// An explicit int8 without int8 dot products (kernels::int8_instructions())
// throws likewise; `quantized` says whether the model file holds int8 layers
// (an explicit int8 on a file without them throws, saying how to quantize it).
PrecisionChoice resolve_precision(PrecisionRequest request, bool quantized = false,
                                  const std::string &model_path = "");

// The precision of each op kind in a plan. Kinds not listed always run fp32.
struct OpPrecisions {
  Precision gemm = Precision::fp32;  // linear layers (oneDNN matmul)
  Precision embed = Precision::fp32; // patch embeddings and spatial-reduction convolutions
  // The attention products: the polarity core's two (phi_k^T v, q_sim @ M),
  // on AMX tiles or AVX512-BF16 dot products, and the softmax window
  // attention's two (q k^T, weights @ v), on AVX512-BF16 dot products (fp32
  // with AMX active): kernels::resolve<Op::polarity_attention /
  // window_attention, DType::bf16>, which says when a shape runs fp32. Feature maps, normalisers and the softmax stay fp32 either way.
  Precision attention = Precision::fp32;
  // int8 only: the linear layers the file holds in int8 (their weights I8
  // with scales) run as int8 GEMMs; the others (patch embeddings, the head,
  // layers kept in float) run fp32, as gemm == fp32.
};

// The precision of each op kind in a model run at `p` on this CPU. The GEMMs
// and patch embeddings run at p. The attention products run in bf16
// only where bf16 products beat fp32 FMAs (AMX-BF16, or AVX512-BF16 dot
// products measured at >= 1.5x the FMA rate): elsewhere the fp32 core is both
// faster and exact (on an Intel Xeon without AMX both its dot products and
// its bf16 core measured slower than fp32: bench/peers/README.md).
// In int8 the GEMMs run int8 (where the file has int8 weights), the rest fp32.
OpPrecisions op_precisions(Precision p);

// Whether bf16 products are faster than fp32 FMAs on this CPU (after any
// POLA_ISA cap), with the reason in words: the test `--precision auto` and
// op_precisions() share.
struct Bf16Speed {
  bool faster = false;
  std::string reason;
};
Bf16Speed bf16_speed();

} // namespace pola
