#include "weights/model_summary.h"

#include "weights/int8_summary.h"

#include "model/config_json.h"
#include "weights/model_metadata.h"

namespace pola::weights {

nlohmann::json model_summary(const ModelFile &f) {
  const ModelConfig cfg = read_model_config(f);
  check_model_tensors(f, cfg);
  const auto classes = read_class_names(f, cfg);
  int64_t params = 0;
  nlohmann::json by_dtype = nlohmann::json::object(); // stored dtype -> parameters
  for (const auto &t : f.tensors()) {
    params += t.numel;
    const char *d = stored_dtype_name(t.dtype);
    by_dtype[d] = by_dtype.value(d, int64_t{0}) + t.numel;
  }
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
  j["stored_dtypes"] = by_dtype;
  if (nlohmann::json q = int8_summary(f); !q.is_null()) j["int8"] = std::move(q);
  j["file_bytes"] = f.file_size();
  j["num_classes"] = classes.size();
  j["classes"] = classes;
  return j;
}

} // namespace pola::weights
