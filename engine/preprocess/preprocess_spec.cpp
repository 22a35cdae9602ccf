// PreprocessSpec: parsing the model file's `preprocess` metadata and checking
// that it describes something the pipeline can do.
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/preprocess/preprocess.h"
#include "weights/error.h"

namespace pola::preprocess {
namespace {

// Bigger than any model input; keeps resize buffers bounded for a bad file.
constexpr int kMaxSize = 8192;

[[noreturn]] void bad(const std::string &what) { throw InputError("preprocess spec: " + what); }

int read_size(const nlohmann::json &j, const char *key, int fallback) {
  if (!j.contains(key)) return fallback;
  const auto &v = j.at(key);
  if (!v.is_number_integer()) bad(std::string("'") + key + "' must be an integer");
  const int64_t x = v.get<int64_t>();
  if (x < 1 || x > kMaxSize) bad(std::string("'") + key + "' = " + std::to_string(x) + " is outside 1.." + std::to_string(kMaxSize));
  return int(x);
}

std::vector<float> read_floats(const nlohmann::json &j, const char *key, const std::vector<float> &fallback) {
  if (!j.contains(key)) return fallback;
  const auto &v = j.at(key);
  if (!v.is_array()) bad(std::string("'") + key + "' must be an array of numbers");
  std::vector<float> out;
  for (const auto &e : v) {
    if (!e.is_number()) bad(std::string("'") + key + "' must be an array of numbers");
    out.push_back(e.get<float>());
  }
  return out;
}

} // namespace

PreprocessSpec PreprocessSpec::from_json(const std::string &json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception &e) {
    bad(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) bad("must be a JSON object");
  PreprocessSpec s;
  s.input_size = read_size(j, "input_size", s.input_size);
  s.resize = read_size(j, "resize", s.resize);
  s.crop = read_size(j, "crop", s.crop);
  s.channels = read_size(j, "channels", s.channels);
  s.mean = read_floats(j, "mean", s.mean);
  s.std = read_floats(j, "std", s.std);
  if (j.contains("interpolation")) {
    if (!j.at("interpolation").is_string()) bad("'interpolation' must be a string");
    s.interpolation = j.at("interpolation").get<std::string>();
  }
  s.validate();
  return s;
}

void PreprocessSpec::validate() const {
  if (channels != 1 && channels != 3) bad("'channels' must be 1 or 3, not " + std::to_string(channels));
  if (interpolation != "bicubic") bad("interpolation '" + interpolation + "' is not supported (only 'bicubic')");
  for (int v : {input_size, resize, crop})
    if (v < 1 || v > kMaxSize) bad("sizes must be in 1.." + std::to_string(kMaxSize));
  if (crop > resize) bad("crop " + std::to_string(crop) + " is larger than resize " + std::to_string(resize));
  if (crop != input_size)
    bad("crop " + std::to_string(crop) + " differs from the model input size " + std::to_string(input_size));
  if (int(mean.size()) != channels || int(std.size()) != channels)
    bad("'mean' and 'std' need one entry per channel (" + std::to_string(channels) + ")");
  for (int c = 0; c < channels; ++c) {
    if (!std::isfinite(mean[c])) bad("'mean' must be finite");
    if (!std::isfinite(std[c]) || !(std[c] > 0)) bad("'std' entries must be finite and positive");
  }
}

} // namespace pola::preprocess
