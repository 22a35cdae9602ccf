#include "weights/model_metadata.h"

#include <cstdio>
#include <mutex>
#include <set>

#include "model/config_json.h"
#include "model/preprocess_defaults.h"
#include "weights/error.h"
#include "weights/int8_weights.h"
#include "weights/tensor_check.h"

namespace pola::weights {

std::map<std::string, std::string> make_metadata(const ModelConfig &config, const std::string &arch,
                                                 const std::vector<std::string> &class_names) {
  return make_metadata(config, arch, class_names, preprocess_for(config));
}

std::map<std::string, std::string> make_metadata(const ModelConfig &config, const std::string &arch,
                                                 const std::vector<std::string> &class_names,
                                                 const nlohmann::json &preprocess) {
  return {
      {"format", kFormatName},
      {"format_version", std::to_string(kFormatVersion)},
      {"arch", arch},
      {"config", config_to_json(config).dump()},
      {"preprocess", preprocess.dump()},
      {"classes", nlohmann::json(class_names).dump()},
  };
}

namespace {
nlohmann::json parse_entry(const ModelFile &f, const std::string &key) {
  const std::string &text = f.metadata_at(key);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &) {
    throw InputError(f.path() + ": metadata '" + key + "' is not valid JSON");
  }
}
} // namespace

void check_model_format(const ModelFile &f) {
  if (f.metadata().count("format") == 0)
    throw InputError(f.path() + ": this is a safetensors file without PolaFormer metadata, not a model file; if it "
                     "holds a checkpoint, convert it with `pola convert " + f.path() + " -o MODEL.pola`");
  if (f.metadata_at("format") != kFormatName)
    throw InputError(f.path() + ": metadata format is '" + f.metadata_at("format") + "', not '" + kFormatName +
                     "' (convert checkpoints with `pola convert`)");
  const std::string &version = f.metadata_at("format_version");
  if (version == std::to_string(kFormatVersion)) {
    if (!f.has_checksums())
      throw InputError(f.path() + ": format_version " + version + " requires checksums, but the header has none "
                       "(the file was damaged or edited)");
    return;
  }
  if (version != std::to_string(kOldestFormatVersion))
    throw InputError(f.path() + ": format_version " + version + " is not supported (this build reads " +
                     std::to_string(kOldestFormatVersion) + " and " + std::to_string(kFormatVersion) + ")");
  // Once per process: a batch tool that opens the same old file per image must not flood stderr.
  static std::once_flag warned;
  std::call_once(warned, [&] {
    std::fprintf(stderr, "pola: warning: %s: format version 1 has no checksums, so damage cannot be detected; "
                 "re-convert it (`pola convert %s -o NEW.pola`) to add them\n", f.path().c_str(), f.path().c_str());
  });
}

ModelConfig read_model_config(const ModelFile &f) {
  check_model_format(f);
  ModelConfig c = config_from_json(parse_entry(f, "config"), f.path());
  const auto arch = f.metadata().find("arch");
  if (arch != f.metadata().end() && !arch->second.empty()) c.arch = arch->second;
  return c;
}

std::vector<std::string> read_class_names(const ModelFile &f, const ModelConfig &c) {
  nlohmann::json j = parse_entry(f, "classes");
  if (!j.is_array() || static_cast<int64_t>(j.size()) != c.num_classes)
    throw InputError(f.path() + ": metadata 'classes' is not an array of " + std::to_string(c.num_classes) + " names");
  std::vector<std::string> names;
  for (const auto &x : j) {
    if (!x.is_string()) throw InputError(f.path() + ": metadata 'classes' holds a non-string");
    names.push_back(x.get<std::string>());
  }
  return names;
}

nlohmann::json read_preprocess(const ModelFile &f) {
  nlohmann::json j = parse_entry(f, "preprocess");
  if (!j.is_object()) throw InputError(f.path() + ": metadata 'preprocess' is not a JSON object");
  return j;
}

void check_model_tensors(const ModelFile &f, const ModelConfig &c) {
  // The tensors of an int8 file that the config does not list: each I8
  // tensor's `_scale` (open() has checked it) and each weight's
  // `.input_scale`, which must be one number.
  std::set<std::string> companions;
  std::vector<std::string> bad_input_scales;
  for (const auto &t : f.tensors()) {
    if (t.dtype == StoredDtype::i8) companions.insert(int8_scale_name(t.name));
    const std::string in = input_scale_name(t.name);
    const TensorView *s = in.empty() ? nullptr : f.find(in);
    if (!s) continue;
    companions.insert(in);
    if (s->shape != std::vector<int64_t>{1})
      bad_input_scales.push_back(in + ": " + shape_string(s->shape) + ", expected " + shape_string({1}));
  }
  ShapeMap present;
  for (const auto &t : f.tensors())
    if (!companions.count(t.name)) present[t.name] = t.shape;
  TensorCheck r = check_tensors(present, expected_tensors(c), /*checkpoint=*/false);
  r.misshaped.insert(r.misshaped.end(), bad_input_scales.begin(), bad_input_scales.end());
  if (!r.ok()) throw InputError(f.path() + ": tensors do not match the config:" + r.describe());
}

} // namespace pola::weights
