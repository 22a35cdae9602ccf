#include "class_ranking.h"

#include <algorithm>
#include <cmath>

namespace pola::app {

std::vector<RankedClass> rank_classes(const float *logits, int classes, int k) {
  const float top = *std::max_element(logits, logits + classes);
  double sum = 0;
  std::vector<RankedClass> all(static_cast<size_t>(classes));
  for (int i = 0; i < classes; ++i) sum += (all[i] = {i, std::exp(double(logits[i]) - top)}).prob;
  for (auto &r : all) r.prob /= sum;
  k = std::max(0, std::min(k, classes));
  std::partial_sort(all.begin(), all.begin() + k, all.end(), [](const RankedClass &a, const RankedClass &b) {
    return a.prob > b.prob || (a.prob == b.prob && a.index < b.index);
  });
  all.resize(static_cast<size_t>(k));
  return all;
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
