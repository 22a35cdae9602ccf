// What `pola info` says of an int8 file (`pola quantize`): its `quantization`
// metadata and, per kind of quantized layer (the weight's name without its
// block: `attn.qg`, `mlp.fc1`, `downsample.reduction`), how many layers and
// the range of their activation and weight scales.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "weights/model_file.h"

namespace pola::weights {

// `block1.0.attn.qg.weight` -> `attn.qg`: the components after the last
// all-digit one, without `.weight`.
std::string layer_kind(const std::string &weight_name);

// {"scheme": <the quantization metadata, parsed>, "layers": N, "kinds": {kind:
// {"layers", "input_scale": [min, max], "weight_scale": [min, max]}}}, or null
// for a file without I8 tensors.
nlohmann::json int8_summary(const ModelFile &file);

} // namespace pola::weights
