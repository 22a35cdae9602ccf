#include "weights/model_summary.h"

#include "model/config_json.h"
#include "weights/model_metadata.h"

namespace pola::weights {

nlohmann::json model_summary(const ModelFile &f) {
  const ModelConfig cfg = read_model_config(f);
  check_model_tensors(f, cfg);
  const auto classes = read_class_names(f, cfg);
  int64_t params = 0;
  for (const auto &t : f.tensors()) params += t.numel;
  nlohmann::json j;
  j["path"] = f.path();
  j["format"] = f.metadata_at("format");
  j["format_version"] = f.metadata_at("format_version");
  j["arch"] = f.metadata().count("arch") ? f.metadata_at("arch") : "custom";
  j["family"] = family_name(cfg.family);
  j["config"] = config_to_json(cfg);
  j["preprocess"] = read_preprocess(f);
  j["parameters"] = params;
  j["tensors"] = f.tensors().size();
  j["file_bytes"] = f.file_size();
  j["num_classes"] = classes.size();
  j["classes"] = classes;
  return j;
}

} // namespace pola::weights
