// PolaFormer++'s q and k as pola_pp.cpp builds them: a linear block's one
// qkvg GEMM writes [q | k | v | g].
#include "engine/models/builders.h"

namespace pola::models {

QkTaps pola_pp_qk_taps(const std::string &block, int64_t dim) {
  return {block + ".attn.qkvg", 0, block + ".attn.qkvg", dim};
}

} // namespace pola::models
