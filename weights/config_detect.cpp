// The family-agnostic front of config detection. Only what the shapes
// determine is read by the family's detector; everything is then cross-checked
// tensor by tensor by the converter against expected_tensors(config), so a
// wrong guess cannot slip through.
#include "weights/config_detect.h"

#include <vector>

#include "weights/error.h"

namespace pola::weights {
namespace {

// "A", "A and B", "A, B and C".
std::string joined(const std::vector<std::string> &parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

} // namespace

ModelConfig detect_config(const ShapeMap &shapes, const std::string &context) {
  const ShapeReader in(shapes, context);
  std::vector<const FamilyDetector *> claimed;
  std::vector<std::string> titles, markers;
  for (const FamilyDetector *d : family_detectors()) {
    if (d->claims(in)) {
      claimed.push_back(d);
      titles.push_back(d->title);
    }
    markers.push_back(std::string("'") + d->marker + "' (" + d->title + ")");
  }
  if (claimed.size() != 1) {
    std::string some;
    size_t k = 0;
    for (auto it = shapes.begin(); it != shapes.end() && k < 5; ++it, ++k) some += (k ? ", " : "") + it->first;
    const std::string none = markers.size() == 2 ? "found neither " + markers[0] + " nor " + markers[1]
                                                 : "found none of " + joined(markers);
    in.fail(std::string("not a PolaFormer checkpoint: ") +
            (claimed.empty() ? none : "it has " + std::string(claimed.size() == 2 ? "both " : "") + joined(titles) +
                                          " tensors") +
            (shapes.empty() ? "; it holds no tensors" : "; first tensors: " + some));
  }
  ModelConfig c = claimed.front()->read(in);
  check_config(c, context + ": detected config");
  return c;
}

} // namespace pola::weights
