// The config a test tool is asked about: a preset name, or a config as JSON
// (what check_macs.py and check_tensors.py pass on the command line).
#pragma once

#include <stdexcept>
#include <string>

#include "model/config_json.h"
#include "model/presets.h"

namespace pola::test {

inline ModelConfig config_from_arg(const std::string &what) {
  if (!what.empty() && what[0] == '{') return config_from_json(nlohmann::json::parse(what), "config");
  const ModelConfig *p = find_preset(what);
  if (!p) throw std::runtime_error("no preset " + what);
  return *p;
}

} // namespace pola::test
