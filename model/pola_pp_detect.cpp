// PolaFormer++'s config read back from checkpoint shapes (the inverse of
// tensors() in pola_pp_family.cpp): the stem from patch_embed.proj.0, per stage
// its width from norm1.norm, its depth from block indices, its attention from
// qkvg (L) vs qkvo (S), heads from attn.s1 (1, h, 1, 2d) or from the RoPE angle
// buffers (d/2 or d), the MLP ratio from ffn.fc1, the LePE kernel from
// attn.lepe and the head width from proj. Nothing in a checkpoint depends on
// the input size, so img_size is the released 224.
#include "model/family.h"
#include "model/shape_reader.h"

namespace pola::model_detail {
namespace {

constexpr const char *kStem = "patch_embed.proj.0.weight";

// The stem's Sequential and the LayerNorm2d wrappers' `norm1.norm` are this
// family's own; neither PVT nor Swin names a tensor so.
bool claims(const ShapeReader &in) { return in.has(kStem) || in.has("layers.0.blocks.0.norm1.norm.weight"); }

// The head dim of a softmax stage from its angle buffers: RoPE.angle is d/2,
// RoPE_linear.angle d (both exist in the authors' checkpoints; a model file
// keeps the one the stage uses).
int64_t head_dim_from_angles(const ShapeReader &in, const std::string &layer) {
  if (in.has(layer + ".RoPE.angle")) return 2 * in.shape(layer + ".RoPE.angle", 1, "head dim")[0];
  return in.shape(layer + ".RoPE_linear.angle", 1, "head dim")[0];
}

ModelConfig read(const ShapeReader &in) {
  ModelConfig c;
  c.family = Family::pp;
  c.img_size = 224; // SPEC-polaformerpp 1: every variant; no tensor depends on it
  const auto &stem = in.shape(kStem, 4, "stem");
  c.in_chans = stem[1];
  size_t stages = 0;
  while (stages < 8 && in.count_indexed("layers." + std::to_string(stages) + ".blocks.") > 0) ++stages;
  if (stages == 0) in.fail("no 'layers.0.blocks.0.*' tensors");
  bool kernel_read = false;
  for (size_t s = 0; s < stages; ++s) {
    const std::string layer = "layers." + std::to_string(s);
    const std::string b = kPolaPPRules.block_name(s, 0);
    StageConfig &st = c.stages.emplace_back();
    st.dim = in.shape(b + ".norm1.norm.weight", 1, "stage width")[0];
    st.depth = in.count_indexed(layer + ".blocks.");
    st.mlp_ratio =
        static_cast<double>(in.shape(b + ".ffn.fc1.weight", 2, "MLP ratio")[0]) / static_cast<double>(st.dim);
    if (in.has(b + ".attn.qkvg.weight")) {
      st.attn = AttentionKind::polarity;
      st.heads = in.shape(b + ".attn.s1", 4, "number of heads")[1];
    } else if (in.has(b + ".attn.qkvo.weight")) {
      st.attn = AttentionKind::softmax_window;
      const int64_t d = head_dim_from_angles(in, layer);
      if (st.dim % d != 0)
        in.fail(layer + ": RoPE angles of a head dim of " + std::to_string(d) + " do not divide the stage width " +
                std::to_string(st.dim));
      st.heads = st.dim / d;
    } else {
      in.fail("cannot detect the attention type of stage " + std::to_string(s + 1) + ": neither '" + b +
              ".attn.qkvg.weight' (polarity) nor '" + b + ".attn.qkvo.weight' (softmax) exists");
    }
    if (!kernel_read) c.kernel_size = in.shape(b + ".attn.lepe.weight", 4, "LePE kernel size")[2];
    kernel_read = true;
  }
  c.projection = in.shape("proj.weight", 4, "head projection width")[0];
  c.num_classes = in.shape("head.weight", 4, "number of classes")[0];
  return c;
}

} // namespace

const FamilyDetector kPolaPPDetector = {"PolaPP", kStem, claims, read};

} // namespace pola::model_detail
