// The architecture of a PolaFormer model: one struct for the converter, the
// engine and the tools. Its JSON form is the `config` entry of a model file
// (weights/FORMAT.md, model/config_json.h); what it implies (token grids,
// windows, tensors) is derived in model/geometry.h and model/tensor_list.h,
// never by the users of this struct.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pola {

// A model family: a backbone layout with its own stage kinds, key names and
// geometry rules (model/family.h lists what each family provides). `pp` is
// PolaFormer++ (../shared/SPEC-polaformerpp.md; "pp" in tests/reference too).
enum class Family { pvt, swin, pp };

// "pvt" / "swin" / "pp", the `family` value of the config JSON.
const char *family_name(Family family);

// The attention of a stage's blocks: the JSON letter is the enum's value.
// PolaFormer++ uses the same two letters for its own kinds: L is its polarity
// linear attention with RoPE (SPEC-polaformerpp 2.7), S global softmax
// attention with RoPE (2.8), whose one "window" is the whole stage.
enum class AttentionKind : char {
  polarity = 'L',        // polarity-aware linear attention (SPEC section 3)
  softmax_window = 'S',  // classic Swin shifted-window softmax attention (SPEC section 5)
  unknown = '?',         // only in a config read from a file, until check_config refuses it
};

struct StageConfig {
  int64_t dim = 0, depth = 0, heads = 0;
  double mlp_ratio = 4.0;
  AttentionKind attn = AttentionKind::polarity;
  int64_t patch = 0;     // PVT: kernel = stride of this stage's patch-embedding conv
  int64_t sr_ratio = 1;  // PVT: spatial-reduction ratio (1 = none)

  int64_t head_dim() const { return dim / heads; }
  // MLP hidden width; check_config guarantees it is whole.
  int64_t hidden() const { return static_cast<int64_t>(mlp_ratio * static_cast<double>(dim)); }
};

struct ModelConfig {
  Family family = Family::pvt;
  // A preset name, the name the model file gives it (`arch` metadata), or
  // "custom". Not part of the config JSON.
  std::string arch = "custom";
  int64_t img_size = 224, in_chans = 3, num_classes = 1000;
  double alpha = 4;        // polarity exponent range: p = 1 + alpha * sigmoid(power)
  int64_t kernel_size = 5; // depthwise kernel of the polarity block's local branch
  // Swin only
  int64_t patch_size = 4;           // patch-embedding kernel = stride
  int64_t window_size = 0;          // window of L blocks (before clipping to the stage)
  int64_t window_size_softmax = 0;  // window of S blocks (before clipping to the stage)
  // PolaFormer++ only: the width P of the head's 1x1 projection (2048, or
  // 2560 for b5). Its stem width is C1/2 and its layer scale always on, as in
  // the authors' code; kernel_size is its LePE kernel (5).
  int64_t projection = 0;
  std::vector<StageConfig> stages;

  size_t num_stages() const { return stages.size(); }
};

// Throws pola::InputError(context + ": ...") unless the config is internally
// consistent (positive sizes, dims divisible by heads, resolutions integral,
// activation tables of sane size, ...). Every config read from a file or
// detected from a checkpoint passes here before anything else uses it.
void check_config(const ModelConfig &c, const std::string &context);

} // namespace pola
