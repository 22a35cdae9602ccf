// The answer of `pola classify --json` for one image, shared by the CLI and
// `pola serve`'s /classify endpoint so both always print the same JSON.
// Plain data in, JSON out: no engine types, so the server (which sees only
// the public library) can use it too.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pola::app {

struct RankedClass {
  int index;
  double prob;
};

// Softmax of one row of logits (in double: probabilities of tiny classes
// stay meaningful), the `k` best first; ties keep the lower index first.
std::vector<RankedClass> rank_classes(const float *logits, int classes, int k);

// {"file": file, "top": [{"index", "class", "prob"}, ...]}; without a file
// name (the server's body has none unless the request gives one) "file" is
// left out.
nlohmann::json classification_json(const std::optional<std::string> &file, const std::vector<RankedClass> &best,
                                   const std::vector<std::string> &class_names);

} // namespace pola::app
