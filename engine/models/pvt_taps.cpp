// Pola-PVT's q and k as pvt.cpp builds them: one qg GEMM writes [q | g]; the
// keys come from the kv GEMM (on the spatially reduced tokens when sr > 1)
// into a node of their own.
#include "engine/models/builders.h"

namespace pola::models {

QkTaps pvt_qk_taps(const std::string &block, int64_t /*dim*/) {
  return {block + ".attn.qg", 0, block + ".attn.k", 0};
}

} // namespace pola::models
