#include "weights/int8_summary.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "weights/int8_weights.h"

namespace pola::weights {

std::string layer_kind(const std::string &weight_name) {
  std::string name = weight_name;
  const std::string suffix = ".weight";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  size_t start = 0, begin = 0;
  while (begin <= name.size()) {
    size_t end = name.find('.', begin);
    if (end == std::string::npos) end = name.size();
    const bool digits = end > begin && std::all_of(name.begin() + long(begin), name.begin() + long(end),
                                                   [](unsigned char c) { return std::isdigit(c); });
    if (digits && end < name.size()) start = end + 1;
    begin = end + 1;
  }
  return name.substr(start);
}

namespace {

void widen(nlohmann::json &range, float lo, float hi) {
  if (range.is_null()) range = {lo, hi};
  range[0] = std::min(range[0].get<float>(), lo);
  range[1] = std::max(range[1].get<float>(), hi);
}

} // namespace

nlohmann::json int8_summary(const ModelFile &file) {
  nlohmann::json kinds = nlohmann::json::object();
  int64_t layers = 0;
  for (const TensorView &t : file.tensors()) {
    if (t.dtype != StoredDtype::i8) continue;
    ++layers;
    nlohmann::json &k = kinds[layer_kind(t.name)];
    k["layers"] = k.contains("layers") ? k["layers"].get<int64_t>() + 1 : int64_t{1};
    if (const TensorView *s = file.find(int8_scale_name(t.name)); s && s->data) {
      const auto [lo, hi] = std::minmax_element(s->data, s->data + s->numel);
      if (s->numel) widen(k["weight_scale"], *lo, *hi);
    }
    if (const TensorView *s = file.find(input_scale_name(t.name)); s && s->data && s->numel == 1)
      widen(k["input_scale"], s->data[0], s->data[0]);
  }
  if (!layers) return nullptr;
  nlohmann::json scheme = nullptr;
  const auto it = file.metadata().find("quantization");
  if (it != file.metadata().end()) scheme = nlohmann::json::parse(it->second, nullptr, false);
  if (scheme.is_discarded()) scheme = it->second; // not JSON: shown as written
  return {{"scheme", scheme}, {"layers", layers}, {"kinds", kinds}};
}

} // namespace pola::weights
