// check_config: the checks every family shares, then the family's own
// (model/*_family.cpp). Limits keep every size the engine derives from a
// config far from overflow, since configs come from untrusted files.
#include <cmath>

#include "model/error.h"
#include "model/family.h"

namespace pola {
namespace model_detail {

void bad_config(const std::string &context, const std::string &what) { throw InputError(context + ": " + what); }

void check_in_range(const std::string &context, int64_t value, const std::string &what) {
  if (value <= 0 || value > kMaxConfigSize)
    bad_config(context, "config " + what + " = " + std::to_string(value) + " is out of range");
}

} // namespace model_detail

void check_config(const ModelConfig &c, const std::string &ctx) {
  using model_detail::bad_config;
  constexpr int64_t kMaxDepth = 1000; // blocks per stage, the engine's limit too (released models: <= 27)
  auto in_range = [&](int64_t v, const std::string &what) { model_detail::check_in_range(ctx, v, what); };
  const model_detail::FamilyRules &family = model_detail::family_rules(c.family);
  const size_t n = c.num_stages();
  if (n == 0 || n > 8) bad_config(ctx, "config must have 1 to 8 stages");
  in_range(c.img_size, "img_size");
  in_range(c.in_chans, "in_chans");
  in_range(c.num_classes, "num_classes");
  in_range(c.kernel_size, "kernel_size");
  if (c.kernel_size % 2 == 0) bad_config(ctx, "config kernel_size must be odd");
  if (!(c.alpha > 0) || !std::isfinite(c.alpha)) bad_config(ctx, "config alpha must be positive");
  for (size_t i = 0; i < n; ++i) {
    const StageConfig &s = c.stages[i];
    const std::string st = " of stage " + std::to_string(i + 1);
    in_range(s.dim, "embed_dims" + st);
    in_range(s.depth, "depths" + st);
    // A single stray key like "block1.999999.x" would otherwise imply millions
    // of expected tensors (gigabytes of checklist) before any shape is checked.
    if (s.depth > kMaxDepth)
      bad_config(ctx, "config depths" + st + " = " + std::to_string(s.depth) + " exceeds " + std::to_string(kMaxDepth));
    in_range(s.heads, "num_heads" + st);
    if (s.dim % s.heads != 0)
      bad_config(ctx, "config embed_dims" + st + " (" + std::to_string(s.dim) + ") is not divisible by its " +
                          std::to_string(s.heads) + " heads");
    if (s.attn != AttentionKind::polarity && s.attn != AttentionKind::softmax_window)
      bad_config(ctx, "config attn_types" + st + " is not L or S");
    if (s.attn == AttentionKind::polarity && s.head_dim() % 2 != 0)
      bad_config(ctx, "config head dim" + st + " must be even for polarity attention");
    if (!family.allows_attention(s.attn)) bad_config(ctx, family.attention_rule);
    const double hidden = s.mlp_ratio * static_cast<double>(s.dim);
    if (!(hidden >= 1) || hidden > model_detail::kMaxConfigSize || hidden != std::floor(hidden))
      bad_config(ctx, "config mlp_ratios" + st + " does not give a whole hidden size");
  }
  family.check(c, ctx);
}

} // namespace pola
