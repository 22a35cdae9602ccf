// The engine's side of `pola convert`'s checks: which preprocessing it can
// run (interpolation names, channels). weights/ knows the file format, not
// the engine, so the converter asks through these. Shared by `pola convert`
// and pola_convert (the C API); header-only so apps/ can use it without
// linking the public library.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/preprocess/preprocess.h"
#include "model/model_config.h"
#include "weights/error.h"

namespace pola::api {

// Throws InputError (prefixed by `option`, e.g. "--interpolation bilinear")
// unless the engine implements the interpolation `name`; checked before any
// file is opened.
inline void check_interpolation_name(const std::string &name, const std::string &option) {
  preprocess::PreprocessSpec probe; // defaults are valid; only the name is under test
  probe.interpolation = name;
  try {
    probe.validate();
  } catch (const InputError &e) {
    throw InputError(option + ": " + e.what());
  }
}

// Throws InputError naming `input` unless the engine can run the `preprocess`
// object about to be written for a model of `config`; option values were
// checked already, so what fails here came from the input's metadata.
inline void check_engine_can_run(const nlohmann::json &pre, const ModelConfig &config, const std::string &input) {
  const std::string culprit = input + ": the preprocess metadata to write, " + pre.dump() + ",";
  preprocess::PreprocessSpec spec;
  try {
    spec = preprocess::PreprocessSpec::from_json(pre.dump());
  } catch (const InputError &e) {
    throw InputError(culprit + " is not usable: " + e.what() + "; nothing written");
  }
  if (spec.channels != config.in_chans)
    throw InputError(culprit + " has 'channels' " + std::to_string(spec.channels) + " but the model takes " +
                     std::to_string(config.in_chans) + "; nothing written");
}

} // namespace pola::api
