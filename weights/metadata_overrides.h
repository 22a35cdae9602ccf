// The parts of a model file's metadata that `pola convert` lets the user set
// (FORMAT.md `classes` and `preprocess`): whatever is given here replaces the
// value the converter would otherwise write (the input model file's own, or
// the defaults for a checkpoint); everything not given is kept.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace pola::weights {

struct MetadataOverrides {
  std::optional<std::vector<std::string>> class_names;
  std::string class_names_file; // where class_names came from, for messages
  std::optional<std::vector<double>> mean, std;
  std::optional<int64_t> resize, crop;
  std::optional<std::string> interpolation;
};

// `current` with the overridden names. Throws pola::InputError naming the
// labels file and both counts unless there is one name per class.
std::vector<std::string> override_class_names(const std::vector<std::string> &current, const MetadataOverrides &o,
                                              const ModelConfig &config);

// `current` (a FORMAT.md `preprocess` object) with the overridden entries.
// Checks what the format itself demands, naming the option at fault: one
// finite mean and one finite positive std per input channel, positive sizes,
// crop <= resize, and crop == the model's input size (the model only takes
// that size). Which interpolations exist is the engine's business, not the
// format's: the caller checks that (ConvertOptions::check_preprocess).
nlohmann::json override_preprocess(const nlohmann::json &current, const MetadataOverrides &o, const ModelConfig &config);

} // namespace pola::weights
