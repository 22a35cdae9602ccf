// Pola-Swin's q and k as swin.cpp builds them: one GEMM writes [q | k | g] of
// the window-partitioned tokens (v gets its own node).
#include "engine/models/builders.h"

namespace pola::models {

QkTaps swin_qk_taps(const std::string &block, int64_t dim) {
  return {block + ".attn.qkg", 0, block + ".attn.qkg", dim};
}

} // namespace pola::models
