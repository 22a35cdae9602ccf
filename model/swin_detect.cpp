// Pola-Swin's config read back from checkpoint shapes (the inverse of
// tensors() in swin_family.cpp): attention types from qkvg vs qkv, heads from
// attn.power or the relative-bias table, windows from positional encodings,
// relative-bias tables and shift masks, the input size from the largest grid
// any of them implies.
#include <algorithm>

#include "model/family.h"
#include "model/presets.h"
#include "model/shape_reader.h"

namespace pola::model_detail {
namespace {

// Its patch embedding, or (a checkpoint missing it) its blocks' own norm1 key:
// any "layers." key would also claim PolaFormer++, whose blocks are
// "layers.i.blocks.j" too but whose norms are "norm1.norm".
bool claims(const ShapeReader &in) {
  return in.has("patch_embed.proj.weight") || in.has("layers.0.blocks.0.norm1.weight");
}

ModelConfig read(const ShapeReader &in) {
  ModelConfig c;
  c.family = Family::swin;
  const auto &pe = in.shape("patch_embed.proj.weight", 4, "patch embedding");
  if (pe[2] != pe[3]) in.fail("patch_embed has a non-square kernel");
  c.in_chans = pe[1];
  c.patch_size = pe[2];
  size_t stages = 0;
  while (stages < 8 && in.count_indexed("layers." + std::to_string(stages) + ".blocks.") > 0) ++stages;
  if (stages == 0) in.fail("no 'layers.0.blocks.0.*' tensors");

  // Per stage: the clipped window each attention table implies. A window
  // smaller than the stage pins the config window exactly; one equal to the
  // stage only bounds it from below.
  std::vector<int64_t> l_win(stages, 0), s_win(stages, 0);
  int64_t grid = 0; // stage-1 token grid side, the largest any stage implies
  bool any_l = false;
  for (size_t s = 0; s < stages; ++s) {
    const std::string b = "layers." + std::to_string(s) + ".blocks.";
    const std::string a = kSwinRules.block_name(s, 0) + ".attn.";
    StageConfig &st = c.stages.emplace_back();
    st.dim = in.shape(b + "0.norm1.weight", 1, "stage width")[0];
    st.depth = in.count_indexed(b);
    st.mlp_ratio = static_cast<double>(in.shape(b + "0.mlp.fc1.weight", 2, "MLP ratio")[0]) /
                   static_cast<double>(st.dim);
    const int64_t scale = int64_t{1} << s;
    if (in.has(a + "qkvg.weight")) {
      st.attn = AttentionKind::polarity;
      st.heads = in.shape(a + "power", 4, "number of heads")[1];
      if (!any_l) c.kernel_size = in.shape(a + "dwc.weight", 4, "local-branch kernel size")[2];
      any_l = true;
      l_win[s] = in.exact_sqrt(in.shape(a + "positional_encoding", 3, "window size")[1], a + "positional_encoding");
      grid = std::max(grid, l_win[s] * scale);
    } else if (in.has(a + "qkv.weight")) {
      st.attn = AttentionKind::softmax_window;
      const auto &table = in.shape(a + "relative_position_bias_table", 2, "softmax window");
      st.heads = table[1];
      const int64_t side = in.exact_sqrt(table[0], a + "relative_position_bias_table");
      if (side % 2 == 0) in.fail(a + "relative_position_bias_table rows are not (2w-1)^2");
      s_win[s] = (side + 1) / 2;
      grid = std::max(grid, s_win[s] * scale);
    } else {
      in.fail("cannot detect the attention type of stage " + std::to_string(s + 1) + ": neither '" + a +
              "qkvg.weight' (polarity) nor '" + a + "qkv.weight' (softmax) exists");
    }
    // Shifted blocks carry a mask (windows, w*w, w*w): windows = (res / w)^2.
    for (int64_t j = 1; j < st.depth; j += 2) {
      const std::string mask = b + std::to_string(j) + ".attn_mask";
      auto m = in.shapes().find(mask);
      if (m == in.shapes().end() || m->second.size() != 3 || m->second[0] <= 0 || m->second[1] <= 0) continue;
      const int64_t w = in.exact_sqrt(m->second[1], mask);
      grid = std::max(grid, w * in.exact_sqrt(m->second[0], mask) * scale);
    }
  }
  if (!any_l)
    in.fail("no stage uses polarity attention (no 'attn.qkvg' tensors): this is a plain Swin checkpoint, not PolaFormer");
  c.img_size = grid * c.patch_size;

  // Config windows: exact where a stage clips them, otherwise the released
  // presets' values (56, or 96 for 384 inputs) when the stages fit them.
  int64_t w_exact = 0, w_low = 0, ws_exact = 0, ws_low = 0;
  for (size_t s = 0; s < stages; ++s) {
    const int64_t res = grid >> s;
    if (l_win[s] && l_win[s] < res) w_exact = std::max(w_exact, l_win[s]);
    if (l_win[s] && l_win[s] >= res) w_low = std::max(w_low, l_win[s]);
    if (s_win[s] && s_win[s] < res) ws_exact = std::max(ws_exact, s_win[s]);
    if (s_win[s] && s_win[s] >= res) ws_low = std::max(ws_low, s_win[s]);
  }
  c.window_size = w_exact ? w_exact : std::max(released_swin_window(c.img_size), w_low);
  c.window_size_softmax = ws_exact ? ws_exact : std::max(released_swin_softmax_window(c.window_size), ws_low);
  c.num_classes = in.shape("head.weight", 2, "number of classes")[0];
  return c;
}

} // namespace

const FamilyDetector kSwinDetector = {"Swin", "patch_embed.proj.weight", claims, read};

} // namespace pola::model_detail
