#include "class_ranking.h"

#include <algorithm>
#include <stdexcept>

#include <polaformer/polaformer.h>

namespace pola::app {

std::vector<RankedClass> rank_classes(const float *logits, int classes, int k) {
  k = std::max(0, std::min(k, classes));
  std::vector<int> index(static_cast<size_t>(k));
  std::vector<double> prob(static_cast<size_t>(k));
  if (k > 0 && pola_top_k(logits, classes, k, index.data(), prob.data()) != POLA_OK)
    throw std::invalid_argument(pola_last_error());
  std::vector<RankedClass> best;
  for (size_t j = 0; j < index.size(); ++j) best.push_back({index[j], prob[j]});
  return best;
}

nlohmann::json classification_json(const std::optional<std::string> &file, const std::vector<RankedClass> &best,
                                   const std::vector<std::string> &class_names) {
  nlohmann::json top = nlohmann::json::array();
  for (const auto &r : best) top.push_back({{"index", r.index}, {"class", class_names[r.index]}, {"prob", r.prob}});
  nlohmann::json out{{"top", top}};
  if (file) out["file"] = *file;
  return out;
}

} // namespace pola::app
