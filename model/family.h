// What a model family contributes to the model description, one file per
// family (pvt_family.cpp, swin_family.cpp, pola_pp_family.cpp): its own config JSON keys, its
// checks, its geometry, its tensor list, its block names and its cost; its
// checkpoint detector sits beside it (pvt_detect.cpp, swin_detect.cpp).
// Everything common (the per-stage lists, the polarity block's parameters, the
// MLP) is done once by the callers. A new family is one more such pair of
// files plus one entry in family.cpp.
// Internal to model/: users go through model_config.h, config_json.h,
// geometry.h and tensor_list.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/geometry.h"
#include "model/model_config.h"
#include "model/shape_reader.h"
#include "model/tensor_list.h"

namespace pola::model_detail {

using Json = nlohmann::json;

// Throws InputError(context + ": " + what): every config error has this form.
[[noreturn]] void bad_config(const std::string &context, const std::string &what);
// The largest size a config may hold: no real model comes near, and every
// product of a few such sizes fits in int64.
constexpr int64_t kMaxConfigSize = 1 << 20;
// Refuses a size outside 1..kMaxConfigSize ("config <what> = <value> is out of range").
void check_in_range(const std::string &context, int64_t value, const std::string &what);

// Required keys of the config JSON, with the type checks config_from_json makes.
class ConfigJsonReader {
 public:
  ConfigJsonReader(const Json &j, std::string context) : j_(j), context_(std::move(context)) {}
  const Json &need(const char *key) const;
  int64_t need_int(const char *key) const;
  std::vector<int64_t> need_ints(const char *key) const;
  // A per-stage list that must have one entry per stage.
  std::vector<int64_t> need_stage_ints(const char *key, size_t stages, const char *length_error) const;
  const std::string &context() const { return context_; }

 private:
  const Json &j_;
  std::string context_;
};

// Appends the tensors of common building blocks to a tensor list.
class TensorListWriter {
 public:
  explicit TensorListWriter(std::vector<TensorSpec> &out) : out_(out) {}
  void add(std::string name, std::vector<int64_t> shape, TensorSpec::Use use = TensorSpec::Use::Required);
  // A conv kernel (out, in_per_group, k, k) and its bias; depthwise when in_per_group is 1 and groups == out.
  void conv(const std::string &prefix, int64_t out, int64_t in_per_group, int64_t k, bool depthwise);
  // An eval-mode BatchNorm2d after the conv `conv_prefix` (with bias): its
  // weight, bias and running statistics are folded into that conv at convert
  // time; its step counter (int64) is dropped.
  void folded_batch_norm(const std::string &prefix, int64_t dim, const std::string &conv_prefix);
  void linear(const std::string &prefix, int64_t out, int64_t in, bool bias = true);
  void norm(const std::string &prefix, int64_t dim);
  // The polarity-attention parameters both families share (SPEC section 3);
  // the projections into q, k, v, g are the family's own.
  void polarity_attention(const std::string &prefix, int64_t dim, int64_t heads, int64_t kernel,
                          int64_t pos_enc_rows);
  void mlp(const std::string &prefix, int64_t dim, int64_t hidden);

 private:
  std::vector<TensorSpec> &out_;
};

struct FamilyRules {
  Family family;
  const char *name;  // the config JSON's `family` value
  // The family's own config keys: read (stages already sized from the common
  // lists) and written.
  void (*read_json)(const ConfigJsonReader &in, ModelConfig &c);
  void (*write_json)(const ModelConfig &c, Json &out);
  // Which attention kinds its stages may use, and the message when one does not.
  bool (*allows_attention)(AttentionKind kind);
  const char *attention_rule;
  // Checks after the common ones (which guarantee 1..8 stages, positive
  // sizes, whole head and MLP widths).
  void (*check)(const ModelConfig &c, const std::string &context);
  // The geometry at an input of height x width (model/geometry.h).
  ModelGeometry (*geometry)(const ModelConfig &c, int64_t height, int64_t width);
  // Input sides must be multiples of this (the product of the downsampling strides).
  int64_t (*size_multiple)(const ModelConfig &c);
  // Every tensor of a checkpoint, in model order.
  void (*tensors)(const ModelConfig &c, const ModelGeometry &g, TensorListWriter &out);
  // The key prefix of block `index` of stage `stage` (both from 0), e.g.
  // "block2.0" or "layers.1.blocks.0" (model/tensor_list.h, block_name).
  std::string (*block_name)(size_t stage, size_t index);
  // Multiply-accumulates of one image at geometry g (model/flops.h): every
  // linear layer, convolution and attention product the model computes,
  // padding included; element-wise work is not counted.
  int64_t (*macs)(const ModelConfig &c, const ModelGeometry &g);
  // Reads its config back from checkpoint shapes (model/<family>_detect.cpp).
  const FamilyDetector *detect;
};

const FamilyRules &family_rules(Family family);
// nullptr when no family has that name.
const FamilyRules *find_family(const std::string &name);
// Every family's name for messages: "pvt, swin or pp" (conjunction "or").
std::string family_names(const char *conjunction);

extern const FamilyRules kPvtRules;
extern const FamilyRules kSwinRules;
extern const FamilyRules kPolaPPRules;
extern const FamilyDetector kPvtDetector;
extern const FamilyDetector kSwinDetector;
extern const FamilyDetector kPolaPPDetector;

// Cost terms both families share (SPEC section 3), so each family's macs()
// lists only its own layout.
// Polarity attention with n_q queries and n_k keys in one sequence, h heads of
// d: the key side builds two (2d) x (d/2) states per head (phi_k^T v1, phi_k^T
// v2); the query side reads them (2 x (2d) x (d/2)) and takes two normaliser
// dot products of 2d (q_sim . mean(phi_k), q_opp . mean(phi_k)).
inline int64_t polarity_core_macs(int64_t n_q, int64_t n_k, int64_t h, int64_t d) {
  return h * (n_k * 2 * d * d + n_q * 2 * d * (d + 2));
}
// The MLP (fc1, fc2) over `tokens` rows.
inline int64_t mlp_macs(int64_t tokens, int64_t dim, int64_t hidden) { return 2 * tokens * dim * hidden; }

// `v / d` for sizes not checked yet: never divides by zero.
inline int64_t guarded_div(int64_t v, int64_t d) { return v / (d > 0 ? d : 1); }

} // namespace pola::model_detail
