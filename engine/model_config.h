// The model configuration stored in a model file's metadata (weights/FORMAT.md),
// parsed and checked. The eight released models are presets of this struct,
// never special cases in the builders.
#pragma once

#include <string>
#include <vector>

namespace pola {

enum class Family { pvt, swin };

struct StageConfig {
  int dim = 0, depth = 0, heads = 0;
  double mlp_ratio = 4.0;
  char attn = 'L';     // 'L' polarity linear attention, 'S' Swin softmax windows
  int patch = 0;       // PVT: kernel = stride of this stage's patch-embedding conv
  int sr_ratio = 1;    // PVT: spatial-reduction ratio
};

struct ModelConfig {
  Family family = Family::pvt;
  std::string arch = "custom";
  int img_size = 224, in_chans = 3, num_classes = 1000;
  double alpha = 4.0;
  int kernel_size = 5;
  int patch_size = 4;            // Swin
  int window_size = 56;          // Swin L blocks
  int window_size_softmax = 7;   // Swin S blocks
  std::vector<StageConfig> stages;
};

// Parses the metadata `config` JSON; `where` names the file for messages.
// Throws pola::InputError for malformed or out-of-range values.
ModelConfig parse_model_config(const std::string &json, const std::string &arch,
                               const std::string &where);

// Spatial side of each stage's token grid for the configured input size.
std::vector<int> stage_resolutions(const ModelConfig &cfg);

} // namespace pola
