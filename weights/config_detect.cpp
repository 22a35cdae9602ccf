// Config detection from tensor shapes. Only what the shapes determine is read
// here; everything is then cross-checked tensor by tensor by the converter
// against expected_tensors(config), so a wrong guess cannot slip through.
#include "weights/config_detect.h"

#include <algorithm>
#include <cmath>

#include "model/presets.h"
#include "model/tensor_list.h"
#include "weights/error.h"

namespace pola::weights {
namespace {

struct Detector {
  const ShapeMap &shapes;
  std::string ctx;

  [[noreturn]] void fail(const std::string &what) const { throw InputError(ctx + ": " + what); }

  bool has(const std::string &name) const { return shapes.count(name) != 0; }

  const std::vector<int64_t> &shape(const std::string &name, size_t rank, const char *why) const {
    auto it = shapes.find(name);
    if (it == shapes.end()) fail(std::string("cannot detect the ") + why + ": tensor '" + name + "' is missing");
    if (it->second.size() != rank)
      fail(std::string("cannot detect the ") + why + ": tensor '" + name + "' has shape " + shape_string(it->second) +
           ", expected rank " + std::to_string(rank));
    for (int64_t d : it->second)
      if (d <= 0) fail(std::string("cannot detect the ") + why + ": tensor '" + name + "' has an empty dimension");
    return it->second;
  }

  // Highest `j` + 1 over keys "<prefix><j>." (block counts per stage).
  int64_t count_indexed(const std::string &prefix) const {
    int64_t n = 0;
    for (auto it = shapes.lower_bound(prefix); it != shapes.end() && it->first.compare(0, prefix.size(), prefix) == 0;
         ++it) {
      const std::string rest = it->first.substr(prefix.size());
      size_t dot = rest.find('.');
      if (dot == 0 || dot == std::string::npos || dot > 6) continue;
      if (!std::all_of(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(dot), ::isdigit)) continue;
      n = std::max<int64_t>(n, std::stoll(rest.substr(0, dot)) + 1);
    }
    return n;
  }

  int64_t exact_sqrt(int64_t v, const std::string &what) const {
    // Bounded first: near 2^63 the rounded root squared overflows int64, and no
    // real token count comes close (shapes with a zero dimension can claim any size).
    if (v > (int64_t{1} << 40)) fail(what + " has " + std::to_string(v) + " rows, implausibly many tokens");
    auto r = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(v))));
    if (r <= 0 || r * r != v) fail(what + " has " + std::to_string(v) + " rows, not a square number of tokens");
    return r;
  }

  double ratio(int64_t hidden, int64_t dim) const { return static_cast<double>(hidden) / static_cast<double>(dim); }

  ModelConfig pvt() const {
    ModelConfig c;
    c.family = Family::pvt;
    size_t stages = 0;
    while (stages < 8 && has("patch_embed" + std::to_string(stages + 1) + ".proj.weight")) ++stages;
    for (size_t s = 0; s < stages; ++s) {
      const std::string i = std::to_string(s + 1);
      const auto &pe = shape("patch_embed" + i + ".proj.weight", 4, "patch embedding");
      if (pe[2] != pe[3]) fail("patch_embed" + i + " has a non-square kernel");
      if (s == 0) c.in_chans = pe[1];
      StageConfig st;
      st.dim = pe[0];
      st.patch = pe[2];
      st.depth = count_indexed("block" + i + ".");
      if (st.depth == 0) fail("stage " + i + " has no blocks (no 'block" + i + ".0.*' tensors)");
      const std::string b = "block" + i + ".0.attn.";
      st.heads = shape(b + "power", 4, "number of heads")[1];
      st.mlp_ratio = ratio(shape("block" + i + ".0.mlp.fc1.weight", 2, "MLP ratio")[0], pe[0]);
      st.sr_ratio = has(b + "sr.weight") ? shape(b + "sr.weight", 4, "spatial reduction")[2] : 1;
      st.attn = AttentionKind::polarity;
      c.stages.push_back(st);
    }
    c.kernel_size = shape("block1.0.attn.dwc.weight", 4, "local-branch kernel size")[2];
    const int64_t side = exact_sqrt(shape("pos_embed1", 3, "input size")[1], "pos_embed1");
    c.img_size = side * c.stages[0].patch;
    c.num_classes = shape("head.weight", 2, "number of classes")[0];
    return c;
  }

  ModelConfig swin() const {
    ModelConfig c;
    c.family = Family::swin;
    const auto &pe = shape("patch_embed.proj.weight", 4, "patch embedding");
    if (pe[2] != pe[3]) fail("patch_embed has a non-square kernel");
    c.in_chans = pe[1];
    c.patch_size = pe[2];
    size_t stages = 0;
    while (stages < 8 && count_indexed("layers." + std::to_string(stages) + ".blocks.") > 0) ++stages;
    if (stages == 0) fail("no 'layers.0.blocks.0.*' tensors");

    // Per stage: the clipped window each attention table implies. A window
    // smaller than the stage pins the config window exactly; one equal to the
    // stage only bounds it from below.
    std::vector<int64_t> l_win(stages, 0), s_win(stages, 0);
    int64_t grid = 0; // stage-1 token grid side, the largest any stage implies
    bool any_l = false, any_l_before = false;
    for (size_t s = 0; s < stages; ++s) {
      const std::string b = "layers." + std::to_string(s) + ".blocks.";
      const std::string a = b + "0.attn.";
      StageConfig &st = c.stages.emplace_back();
      st.dim = shape(b + "0.norm1.weight", 1, "stage width")[0];
      st.depth = count_indexed(b);
      st.mlp_ratio = ratio(shape(b + "0.mlp.fc1.weight", 2, "MLP ratio")[0], st.dim);
      const int64_t scale = int64_t{1} << s;
      if (has(a + "qkvg.weight")) {
        any_l = true;
        st.attn = AttentionKind::polarity;
        st.heads = shape(a + "power", 4, "number of heads")[1];
        if (!any_l_before) c.kernel_size = shape(a + "dwc.weight", 4, "local-branch kernel size")[2];
        any_l_before = true;
        l_win[s] = exact_sqrt(shape(a + "positional_encoding", 3, "window size")[1], a + "positional_encoding");
        grid = std::max(grid, l_win[s] * scale);
      } else if (has(a + "qkv.weight")) {
        st.attn = AttentionKind::softmax_window;
        const auto &table = shape(a + "relative_position_bias_table", 2, "softmax window");
        st.heads = table[1];
        const int64_t side = exact_sqrt(table[0], a + "relative_position_bias_table");
        if (side % 2 == 0) fail(a + "relative_position_bias_table rows are not (2w-1)^2");
        s_win[s] = (side + 1) / 2;
        grid = std::max(grid, s_win[s] * scale);
      } else {
        fail("cannot detect the attention type of stage " + std::to_string(s + 1) + ": neither '" + a +
             "qkvg.weight' (polarity) nor '" + a + "qkv.weight' (softmax) exists");
      }
      // Shifted blocks carry a mask (windows, w*w, w*w): windows = (res / w)^2.
      for (int64_t j = 1; j < st.depth; j += 2) {
        auto m = shapes.find(b + std::to_string(j) + ".attn_mask");
        if (m == shapes.end() || m->second.size() != 3 || m->second[0] <= 0 || m->second[1] <= 0) continue;
        const int64_t w = exact_sqrt(m->second[1], b + std::to_string(j) + ".attn_mask");
        grid = std::max(grid, w * exact_sqrt(m->second[0], b + std::to_string(j) + ".attn_mask") * scale);
      }
    }
    if (!any_l)
      fail("no stage uses polarity attention (no 'attn.qkvg' tensors): this is a plain Swin checkpoint, not PolaFormer");
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
    c.num_classes = shape("head.weight", 2, "number of classes")[0];
    return c;
  }
};

} // namespace

ModelConfig detect_config(const ShapeMap &shapes, const std::string &context) {
  Detector d{shapes, context};
  const bool pvt = d.has("patch_embed1.proj.weight");
  const bool swin = d.has("patch_embed.proj.weight") || d.count_indexed("layers.") > 0;
  if (pvt == swin) {
    std::string some;
    size_t k = 0;
    for (auto it = shapes.begin(); it != shapes.end() && k < 5; ++it, ++k) some += (k ? ", " : "") + it->first;
    d.fail(std::string("not a PolaFormer checkpoint: ") +
           (pvt ? "it has both PVT and Swin tensors" : "found neither 'patch_embed1.proj.weight' (PVT) nor "
                                                       "'patch_embed.proj.weight' (Swin)") +
           (shapes.empty() ? "; it holds no tensors" : "; first tensors: " + some));
  }
  ModelConfig c = pvt ? d.pvt() : d.swin();
  check_config(c, context + ": detected config");
  return c;
}

} // namespace pola::weights
