// The architecture of a PolaFormer model as stored in a model file's
// `config` metadata (FORMAT.md), the eight released presets (SPEC section 1),
// and the full list of tensors a config implies, the converter's checklist.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace pola::weights {

struct ModelConfig {
  std::string family; // "pvt" or "swin"
  int64_t img_size = 224;
  int64_t in_chans = 3;
  int64_t num_classes = 1000;
  std::vector<int64_t> embed_dims, depths, num_heads;
  std::vector<double> mlp_ratios;
  std::vector<std::string> attn_types; // "L" polarity linear, "S" Swin softmax
  double alpha = 4;
  int64_t kernel_size = 5;
  // PVT only
  std::vector<int64_t> patch_sizes, sr_ratios;
  // Swin only
  int64_t patch_size = 4, window_size = 0, window_size_softmax = 0;

  size_t num_stages() const { return depths.size(); }
};

nlohmann::json config_to_json(const ModelConfig &c);
// Parses and checks a config (check_config). `context` prefixes errors.
ModelConfig config_from_json(const nlohmann::json &j, const std::string &context);
// Throws InputError(context + ": ...") unless the config is internally
// consistent (positive sizes, dims divisible by heads, resolutions integral, ...).
void check_config(const ModelConfig &c, const std::string &context);

// The eight released configurations, by name (pola_pvt_tiny, ..., pola_swin_b_384).
const std::vector<std::pair<std::string, ModelConfig>> &presets();
const ModelConfig *find_preset(const std::string &name);
// Name of the preset equal to `c`, or "custom".
std::string arch_name(const ModelConfig &c);
// Human-readable differences ("depths: [2,2,6,2] vs [2,2,18,2]"); empty if equal.
std::vector<std::string> config_differences(const ModelConfig &a, const ModelConfig &b);

// Per-stage token grid side (PVT: after each patch embedding; Swin: after
// patch embedding and merging).
std::vector<int64_t> stage_resolutions(const ModelConfig &c);
// Swin: the window actually used in stage s (clipped to the stage), and
// whether odd blocks of the stage shift.
int64_t swin_stage_window(const ModelConfig &c, size_t s);

struct TensorSpec {
  enum class Use { Required, Optional, Dropped };
  std::string name;
  std::vector<int64_t> shape;
  Use use = Use::Required; // Optional: copied when present (PVT norm.*); Dropped: buffer recomputed by the engine
};
// Every tensor a checkpoint of config `c` holds, in model order.
std::vector<TensorSpec> expected_tensors(const ModelConfig &c);

// "(2, 3, 5)" for messages.
std::string shape_string(const std::vector<int64_t> &shape);

// The `preprocess` metadata object (FORMAT.md) for a model of this config.
nlohmann::json preprocess_for(const ModelConfig &c);

} // namespace pola::weights
