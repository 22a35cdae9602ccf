// The config's JSON form: the `config` entry of a model file (weights/FORMAT.md).
// Per-stage values are stored as parallel lists (embed_dims, depths, ...), the
// layout the reference's configs use; the same config always dumps to the
// same bytes (keys sorted, whole numbers written as integers).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/model_config.h"

namespace pola {

nlohmann::json config_to_json(const ModelConfig &c);

// Parses and checks (check_config) a config; `context` (the file) prefixes
// every error. The result's `arch` is "custom": the name is not part of the
// config JSON.
ModelConfig config_from_json(const nlohmann::json &j, const std::string &context);

} // namespace pola
