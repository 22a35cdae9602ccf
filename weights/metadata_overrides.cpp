#include "weights/metadata_overrides.h"

#include <cmath>
#include <sstream>

#include "weights/error.h"

namespace pola::weights {
namespace {

std::string join(const std::vector<double> &v) {
  std::ostringstream s; // prints nan and inf as such (JSON would say null)
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  return s.str();
}

void check_per_channel(const char *option, const std::vector<double> &v, const ModelConfig &c, bool positive) {
  const std::string given = std::string(option) + " " + join(v);
  if (static_cast<int64_t>(v.size()) != c.in_chans)
    throw InputError(given + ": " + std::to_string(v.size()) + " value(s) given, but the model takes " +
                     std::to_string(c.in_chans) + " input channel(s); give one value per channel, comma-separated");
  for (double x : v) {
    if (!std::isfinite(x)) throw InputError(given + ": every value must be a finite number");
    if (positive && !(x > 0)) throw InputError(given + ": every value must be greater than 0 (images are divided by it)");
  }
}

int64_t size_entry(const nlohmann::json &pre, const char *key) {
  const auto it = pre.find(key);
  if (it == pre.end() || !it->is_number_integer())
    throw InputError(std::string("the model's preprocess metadata has no integer '") + key + "'");
  return it->get<int64_t>();
}

} // namespace

std::vector<std::string> override_class_names(const std::vector<std::string> &current, const MetadataOverrides &o,
                                              const ModelConfig &c) {
  if (!o.class_names) return current;
  const auto &names = *o.class_names;
  if (static_cast<int64_t>(names.size()) != c.num_classes)
    throw InputError(o.class_names_file + ": " + std::to_string(names.size()) + " class names, but the model has " +
                     std::to_string(c.num_classes) + " classes (--labels needs one name per line, one line per class)");
  return names;
}

nlohmann::json override_preprocess(const nlohmann::json &current, const MetadataOverrides &o, const ModelConfig &c) {
  nlohmann::json pre = current;
  if (o.mean) {
    check_per_channel("--mean", *o.mean, c, /*positive=*/false);
    pre["mean"] = *o.mean;
  }
  if (o.std) {
    check_per_channel("--std", *o.std, c, /*positive=*/true);
    pre["std"] = *o.std;
  }
  if (o.resize) {
    if (*o.resize < 1) throw InputError("--resize " + std::to_string(*o.resize) + ": must be a positive size in pixels");
    pre["resize"] = *o.resize;
  }
  if (o.crop) {
    if (*o.crop < 1) throw InputError("--crop " + std::to_string(*o.crop) + ": must be a positive size in pixels");
    pre["crop"] = *o.crop;
  }
  if (o.interpolation) pre["interpolation"] = *o.interpolation;

  // Checked on the result, so a --resize alone cannot slip under the kept crop.
  if (o.resize || o.crop) {
    const int64_t resize = size_entry(pre, "resize"), crop = size_entry(pre, "crop");
    if (crop > resize)
      throw InputError(o.crop ? "--crop " + std::to_string(crop) + ": larger than the resized image (" +
                                    std::to_string(resize) + " x " + std::to_string(resize) + "); the center crop must fit"
                              : "--resize " + std::to_string(resize) + ": smaller than the center crop of " +
                                    std::to_string(crop) + " the model takes; resize must be at least the crop");
    if (crop != c.img_size)
      throw InputError("--crop " + std::to_string(crop) + ": the model takes " + std::to_string(c.img_size) + " x " +
                       std::to_string(c.img_size) + " inputs, so the crop must be " + std::to_string(c.img_size));
  }
  return pre;
}

} // namespace pola::weights
