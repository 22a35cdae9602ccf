// The preprocessing a model of a config was evaluated with (SPEC section 7),
// as the `preprocess` metadata object of a model file (weights/FORMAT.md).
#pragma once

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace pola {

nlohmann::json preprocess_for(const ModelConfig &c);

} // namespace pola
