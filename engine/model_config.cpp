#include "engine/model_config.h"

#include <nlohmann/json.hpp>

#include "weights/error.h"
#include "weights/model_config.h"

namespace pola {

// The model file's config is parsed and checked once, by the weights layer
// (weights/model_config.h, shared with the converter); the engine regroups it
// per stage, the shape its builders walk.
ModelConfig parse_model_config(const std::string &text, const std::string &arch, const std::string &where) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InputError(where + ": model config is not valid JSON");
  weights::ModelConfig w = weights::config_from_json(j, where);
  ModelConfig c;
  c.arch = arch.empty() ? "custom" : arch;
  c.family = w.family == "pvt" ? Family::pvt : Family::swin;
  c.img_size = static_cast<int>(w.img_size);
  c.in_chans = static_cast<int>(w.in_chans);
  c.num_classes = static_cast<int>(w.num_classes);
  c.alpha = w.alpha;
  c.kernel_size = static_cast<int>(w.kernel_size);
  c.patch_size = static_cast<int>(w.patch_size);
  c.window_size = static_cast<int>(w.window_size);
  c.window_size_softmax = static_cast<int>(w.window_size_softmax);
  for (size_t i = 0; i < w.num_stages(); ++i) {
    StageConfig s;
    s.dim = static_cast<int>(w.embed_dims[i]);
    s.depth = static_cast<int>(w.depths[i]);
    s.heads = static_cast<int>(w.num_heads[i]);
    s.mlp_ratio = w.mlp_ratios[i];
    s.attn = w.attn_types[i][0];
    if (c.family == Family::pvt) {
      s.patch = static_cast<int>(w.patch_sizes[i]);
      s.sr_ratio = static_cast<int>(w.sr_ratios[i]);
    }
    c.stages.push_back(s);
  }
  return c;
}

std::vector<int> stage_resolutions(const ModelConfig &cfg) {
  std::vector<int> res;
  int r = cfg.family == Family::pvt ? cfg.img_size : cfg.img_size / cfg.patch_size;
  for (const auto &s : cfg.stages) {
    if (cfg.family == Family::pvt) r /= s.patch; // conv with kernel = stride, no padding
    res.push_back(r);
    if (cfg.family == Family::swin) r /= 2;      // patch merging
  }
  return res;
}

} // namespace pola
