#include "model/presets.h"

#include "model/config_json.h"

namespace pola {
namespace {

ModelConfig pvt(const char *name, std::vector<int64_t> depths) {
  ModelConfig c;
  c.family = Family::pvt;
  c.arch = name;
  const int64_t dims[] = {64, 128, 320, 512}, heads[] = {1, 2, 5, 8}, patches[] = {4, 2, 2, 2};
  const double ratios[] = {8, 8, 4, 4};
  for (size_t i = 0; i < 4; ++i) {
    StageConfig s;
    s.dim = dims[i];
    s.depth = depths[i];
    s.heads = heads[i];
    s.mlp_ratio = ratios[i];
    s.attn = AttentionKind::polarity;
    s.patch = patches[i];
    s.sr_ratio = 1;
    c.stages.push_back(s);
  }
  return c;
}

ModelConfig swin(const char *name, int64_t dim, std::vector<int64_t> depths, std::vector<int64_t> heads,
                 int64_t img) {
  ModelConfig c;
  c.family = Family::swin;
  c.arch = name;
  c.img_size = img;
  c.patch_size = 4;
  c.window_size = released_swin_window(img);
  c.window_size_softmax = released_swin_softmax_window(c.window_size);
  for (size_t i = 0; i < 4; ++i) {
    StageConfig s;
    s.dim = dim << i;
    s.depth = depths[i];
    s.heads = heads[i];
    s.mlp_ratio = 4;
    s.attn = i < 2 ? AttentionKind::polarity : AttentionKind::softmax_window;
    c.stages.push_back(s);
  }
  return c;
}

// PolaFormer++ (SPEC-polaformerpp section 1): L, L, S, S; MLP ratio 3.5; LePE 5x5.
ModelConfig pola_pp(const char *name, std::vector<int64_t> dims, std::vector<int64_t> depths,
                    std::vector<int64_t> heads, int64_t projection = 2048) {
  ModelConfig c;
  c.family = Family::pp;
  c.arch = name;
  c.projection = projection;
  for (size_t i = 0; i < 4; ++i) {
    StageConfig s;
    s.dim = dims[i];
    s.depth = depths[i];
    s.heads = heads[i];
    s.mlp_ratio = 3.5;
    s.attn = i < 2 ? AttentionKind::polarity : AttentionKind::softmax_window;
    c.stages.push_back(s);
  }
  return c;
}

} // namespace

int64_t released_swin_window(int64_t img_size) { return img_size >= 384 ? 96 : 56; }
int64_t released_swin_softmax_window(int64_t window_size) { return window_size > 56 ? 12 : 7; }

const std::vector<std::pair<std::string, ModelConfig>> &presets() {
  static const std::vector<std::pair<std::string, ModelConfig>> p = [] {
    std::vector<ModelConfig> all = {
        pvt("pola_pvt_tiny", {2, 2, 2, 2}),
        pvt("pola_pvt_small", {3, 4, 6, 3}),
        pvt("pola_pvt_medium", {3, 4, 18, 3}),
        pvt("pola_pvt_large", {3, 8, 27, 3}),
        swin("pola_swin_t", 96, {2, 2, 6, 2}, {3, 6, 12, 24}, 224),
        swin("pola_swin_s", 96, {2, 2, 18, 2}, {3, 6, 12, 24}, 224),
        swin("pola_swin_b", 128, {2, 2, 18, 2}, {4, 8, 16, 32}, 224),
        swin("pola_swin_b_384", 128, {2, 2, 18, 2}, {4, 8, 16, 32}, 384),
        pola_pp("pola_pp_b0", {32, 64, 128, 384}, {2, 2, 2, 2}, {1, 2, 4, 12}),
        pola_pp("pola_pp_b1", {32, 64, 192, 384}, {2, 2, 4, 2}, {1, 2, 6, 12}),
        pola_pp("pola_pp_b2", {64, 128, 256, 512}, {2, 2, 6, 2}, {1, 2, 4, 8}),
        pola_pp("pola_pp_b3", {64, 128, 320, 512}, {3, 5, 9, 3}, {1, 2, 5, 8}),
        pola_pp("pola_pp_b4", {96, 192, 384, 512}, {4, 6, 12, 6}, {1, 2, 6, 8}),
        pola_pp("pola_pp_b5", {96, 192, 448, 640}, {4, 7, 19, 8}, {1, 2, 7, 10}, 2560),
    };
    std::vector<std::pair<std::string, ModelConfig>> named;
    for (auto &c : all) named.emplace_back(c.arch, std::move(c));
    return named;
  }();
  return p;
}

const ModelConfig *find_preset(const std::string &name) {
  for (const auto &p : presets())
    if (p.first == name) return &p.second;
  return nullptr;
}

std::string arch_name(const ModelConfig &c) {
  for (const auto &p : presets())
    if (config_differences(p.second, c).empty()) return p.first;
  return "custom";
}

std::vector<std::string> config_differences(const ModelConfig &a, const ModelConfig &b) {
  const nlohmann::json ja = config_to_json(a), jb = config_to_json(b);
  std::vector<std::string> diffs;
  for (auto it = ja.begin(); it != ja.end(); ++it) {
    auto other = jb.find(it.key());
    if (other == jb.end()) diffs.push_back(it.key() + ": " + it.value().dump() + " vs (absent)");
    else if (*other != it.value()) diffs.push_back(it.key() + ": " + it.value().dump() + " vs " + other->dump());
  }
  for (auto it = jb.begin(); it != jb.end(); ++it)
    if (!ja.contains(it.key())) diffs.push_back(it.key() + ": (absent) vs " + it.value().dump());
  return diffs;
}

} // namespace pola
