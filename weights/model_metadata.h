// The `__metadata__` of a model file (FORMAT.md): building it when converting,
// and reading it back (format check, config, class names, preprocessing).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"
#include "weights/model_file.h"

namespace pola::weights {

constexpr const char *kFormatName = "polaformer";
// Version 2 added checksums (and BF16 storage; FORMAT.md). Version 1 files,
// written before checksums existed, still load, with a one-line warning.
constexpr int kFormatVersion = 2;
constexpr int kOldestFormatVersion = 1;

// `preprocess` defaults to preprocess_for(config) (model/preprocess_defaults.h).
std::map<std::string, std::string> make_metadata(const ModelConfig &config, const std::string &arch,
                                                 const std::vector<std::string> &class_names);
std::map<std::string, std::string> make_metadata(const ModelConfig &config, const std::string &arch,
                                                 const std::vector<std::string> &class_names,
                                                 const nlohmann::json &preprocess);

// Refuses a file whose metadata does not say it is a model file of a
// format version this build reads (a bare safetensors file is named as such).
void check_model_format(const ModelFile &file);

// Checks `format` and `format_version`, then parses and checks `config`; the
// config's `arch` is the file's `arch` entry ("custom" when absent or empty).
ModelConfig read_model_config(const ModelFile &file);
// The `classes` array; InputError unless it is num_classes strings.
std::vector<std::string> read_class_names(const ModelFile &file, const ModelConfig &config);
// The `preprocess` object as JSON (checked to be an object).
nlohmann::json read_preprocess(const ModelFile &file);

// Checks that the file holds exactly the tensors `config` implies, with the
// right shapes (Optional ones may be absent, Dropped buffers must be), plus
// what an int8 file adds (FORMAT.md): the `_scale` of each I8 tensor and a
// `<prefix>.input_scale` of shape {1} beside a `<prefix>.weight`.
// The error lists what is missing, unexpected and mis-shaped.
void check_model_tensors(const ModelFile &file, const ModelConfig &config);

} // namespace pola::weights
