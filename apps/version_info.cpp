#include "version_info.h"

#include <cstdlib>
#include <oneapi/dnnl/dnnl.h>
#include <sstream>

#include "apps/git_revision.h"
#include "engine/precision.h"
#include "kernels/cache_sizes.h"
#include "kernels/registry.h"

#ifndef POLA_VERSION
#define POLA_VERSION "unknown"
#endif

namespace pola::app {

std::string version_text() {
  std::ostringstream out;
  out << "pola " << POLA_VERSION << "\n";
  out << "  revision  " << pola::app::git_revision() << "\n";
#if defined(__clang__)
  out << "  compiler  clang " << __clang_version__ << "\n";
#elif defined(__GNUC__)
  out << "  compiler  gcc " << __VERSION__ << "\n";
#endif
  const char *forced = std::getenv("POLA_ISA");
  out << "  isa       " << kernels::isa_name(kernels::active_isa())
      << (forced && *forced ? std::string(" (POLA_ISA=") + forced + ")" : std::string(" (best this CPU and OS support)"))
      << "\n";
  // Empty on x86-64, where the isa line already says it all; on aarch64 the HWCAP
  // extensions (asimd, asimddp, bf16, i8mm, sve) the dispatch reads.
  const char *features = kernels::cpu_features();
  if (*features) out << "  cpu       " << features << " (from the kernel's HWCAP words)\n";
  const PrecisionChoice automatic = resolve_precision(PrecisionRequest::automatic);
  out << "  bf16      " << kernels::bf16_instructions_name(kernels::active_isa())
      << " (native bf16 instructions; --precision bf16 needs AMX-BF16 or AVX512-BF16)\n";
  const char *int8 = kernels::int8_instructions();
  out << "  int8      " << (int8 ? int8 : "none")
      << " (int8 dot products; --precision int8 needs AMX-INT8, AVX512-VNNI or AVX-VNNI and a file made by "
         "pola quantize)\n";
  out << "  precision auto = " << precision_name(automatic.precision) << " (" << automatic.reason
      << "; int8 for a quantized file" << (int8 ? "" : ", not on this CPU") << ")\n";
  if (kernels::native_bf16(kernels::active_isa())) {
    const Precision attention = op_precisions(Precision::bf16).attention;
    out << "  precision bf16 runs the attention products in " << precision_name(attention)
        << " (bf16 only where bf16 products are faster than fp32 FMAs)";
    // A Swin window (7 x 7 tokens, 32 channels per head): does a bf16 kernel take it here?
    kernels::WindowAttnArgs swin_window;
    swin_window.tokens = 49;
    swin_window.heads = 1;
    swin_window.head_dim = 32;
    const bool window_bf16 =
        kernels::resolve<kernels::Op::window_attention, DType::bf16>(swin_window).dtype == DType::bf16;
    if (attention == Precision::bf16)
      out << ": the polarity cores'"
          << (window_bf16 ? " and the softmax windows'" : "; the softmax windows' stay fp32 (no AMX window kernel)");
    out << "\n";
  }
  const char *forced_l1d = kernels::l1d_override();
  out << "  cache     L1d " << kernels::l1d_bytes() / 1024 << " KB per core"
      << (forced_l1d ? std::string(" (POLA_L1D_BYTES=") + forced_l1d + ")" : std::string())
      << ", which the attention kernels' blocking follows\n";
  const dnnl_version_t *v = dnnl_version();
  out << "  oneDNN    " << v->major << "." << v->minor << "." << v->patch << "\n";
  return out.str();
}

} // namespace pola::app
