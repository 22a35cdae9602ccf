// Step-1 stand-in: the avx512 table points at the scalar references until the
// xsimd kernels land.
#include "kernels/isa/tables.h"
#include "kernels/reference/reference.h"

namespace pola::kernels::isa {
const KernelTable &avx512_table() {
  static const KernelTable t{Isa::avx512, &reference::layernorm, &reference::gelu,
                             &reference::mul_rows, &reference::pola_attention,
                             &reference::window_attention};
  return t;
}
} // namespace pola::kernels::isa
