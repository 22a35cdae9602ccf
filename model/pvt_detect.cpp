// Pola-PVT's config read back from checkpoint shapes (the inverse of
// tensors() in pvt_family.cpp): stages from patch_embed<i>, depths from block
// indices, heads from attn.power (1, h, 1, d), MLP ratios from fc1, spatial
// reduction from attn.sr, the input size from pos_embed1's rows.
#include "model/family.h"
#include "model/shape_reader.h"

namespace pola::model_detail {
namespace {

bool claims(const ShapeReader &in) { return in.has("patch_embed1.proj.weight"); }

ModelConfig read(const ShapeReader &in) {
  ModelConfig c;
  c.family = Family::pvt;
  size_t stages = 0;
  while (stages < 8 && in.has("patch_embed" + std::to_string(stages + 1) + ".proj.weight")) ++stages;
  for (size_t s = 0; s < stages; ++s) {
    const std::string i = std::to_string(s + 1);
    const auto &pe = in.shape("patch_embed" + i + ".proj.weight", 4, "patch embedding");
    if (pe[2] != pe[3]) in.fail("patch_embed" + i + " has a non-square kernel");
    if (s == 0) c.in_chans = pe[1];
    StageConfig st;
    st.dim = pe[0];
    st.patch = pe[2];
    st.depth = in.count_indexed("block" + i + ".");
    if (st.depth == 0) in.fail("stage " + i + " has no blocks (no 'block" + i + ".0.*' tensors)");
    const std::string b = kPvtRules.block_name(s, 0) + ".attn.";
    st.heads = in.shape(b + "power", 4, "number of heads")[1];
    st.mlp_ratio = static_cast<double>(in.shape(kPvtRules.block_name(s, 0) + ".mlp.fc1.weight", 2, "MLP ratio")[0]) /
                   static_cast<double>(pe[0]);
    st.sr_ratio = in.has(b + "sr.weight") ? in.shape(b + "sr.weight", 4, "spatial reduction")[2] : 1;
    st.attn = AttentionKind::polarity;
    c.stages.push_back(st);
  }
  c.kernel_size = in.shape("block1.0.attn.dwc.weight", 4, "local-branch kernel size")[2];
  const int64_t side = in.exact_sqrt(in.shape("pos_embed1", 3, "input size")[1], "pos_embed1");
  c.img_size = side * c.stages[0].patch;
  c.num_classes = in.shape("head.weight", 2, "number of classes")[0];
  return c;
}

} // namespace

const FamilyDetector kPvtDetector = {"PVT", "patch_embed1.proj.weight", claims, read};

} // namespace pola::model_detail
