// The answer of `pola classify --json` for one image, shared by the CLI,
// `pola serve`'s /classify endpoint and the Dask example's JSON lines (through
// the Python binding), so all of them print the same JSON. Plain data in,
// JSON out, over the public library only (the server sees nothing else).
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

// The `k` most probable classes of one row of logits, best first: the
// library's pola_top_k (a softmax in double), so these are the probabilities
// Python and the Dask example report too.
std::vector<RankedClass> rank_classes(const float *logits, int classes, int k);

// {"file": file, "top": [{"index", "class", "prob"}, ...]}; without a file
// name (the server's body has none unless the request gives one) "file" is
// left out.
nlohmann::json classification_json(const std::optional<std::string> &file, const std::vector<RankedClass> &best,
                                   const std::vector<std::string> &class_names);

} // namespace pola::app
