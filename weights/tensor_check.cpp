#include "weights/tensor_check.h"

#include <set>

namespace pola::weights {

TensorCheck check_tensors(const ShapeMap &present, const std::vector<TensorSpec> &expected, bool checkpoint) {
  TensorCheck r;
  std::set<std::string> known;
  for (const auto &spec : expected) {
    const bool converter_only = spec.use == TensorSpec::Use::Dropped || spec.use == TensorSpec::Use::Folded;
    if (converter_only && !checkpoint) continue;
    known.insert(spec.name);
    auto it = present.find(spec.name);
    if (it == present.end()) {
      const bool needed = spec.use == TensorSpec::Use::Required || spec.use == TensorSpec::Use::Folded;
      if (needed) r.missing.push_back(spec.name + " " + shape_string(spec.shape));
    } else if (it->second != spec.shape) {
      r.misshaped.push_back(spec.name + ": " + shape_string(it->second) + ", expected " + shape_string(spec.shape));
    }
  }
  for (const auto &kv : present)
    if (!known.count(kv.first)) r.extra.push_back(kv.first + " " + shape_string(kv.second));
  return r;
}

std::string TensorCheck::describe(size_t max_each) const {
  std::string s;
  auto list = [&](const char *title, const std::vector<std::string> &v) {
    if (v.empty()) return;
    s += "\n  " + std::to_string(v.size()) + " " + title + ":";
    for (size_t i = 0; i < v.size() && i < max_each; ++i) s += "\n    " + v[i];
    if (v.size() > max_each) s += "\n    ... and " + std::to_string(v.size() - max_each) + " more";
  };
  list("missing", missing);
  list("unexpected", extra);
  list("mis-shaped", misshaped);
  return s;
}

} // namespace pola::weights
