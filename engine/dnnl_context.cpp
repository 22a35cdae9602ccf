#include "engine/dnnl_context.h"

namespace pola {

dnnl::engine &cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

} // namespace pola
