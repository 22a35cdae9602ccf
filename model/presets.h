// The released configurations (SPEC section 1; PolaFormer++ b0-b5 from
// SPEC-polaformerpp section 1) and comparing configs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/model_config.h"

namespace pola {

// By name (pola_pvt_tiny, ..., pola_swin_b_384, pola_pp_b0, ..., pola_pp_b5); each preset's `arch` is its name.
const std::vector<std::pair<std::string, ModelConfig>> &presets();
const ModelConfig *find_preset(const std::string &name);
// Name of the preset equal to `c` (config JSON equal; `arch` is ignored), or "custom".
std::string arch_name(const ModelConfig &c);
// Human-readable differences ("depths: [2,2,6,2] vs [2,2,18,2]"); empty if equal.
std::vector<std::string> config_differences(const ModelConfig &a, const ModelConfig &b);

// The released Swin models' windows (SPEC section 5): L blocks use 56, or 96
// for 384 inputs; S blocks use 7, or 12 when the L window exceeds 56.
int64_t released_swin_window(int64_t img_size);
int64_t released_swin_softmax_window(int64_t window_size);

} // namespace pola
