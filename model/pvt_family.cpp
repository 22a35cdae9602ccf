// Pola-PVT (SPEC section 4): each stage starts with its own patch-embedding
// conv (kernel = stride) and a learned position embedding; every block attends
// globally over the stage, with keys/values optionally shrunk by a spatial-
// reduction conv (sr x sr, stride sr). Polarity attention only.
#include "model/family.h"

namespace pola::model_detail {
namespace {

constexpr const char *kListLengthError = "config patch_sizes / sr_ratios length differs from depths";

void read_json(const ConfigJsonReader &in, ModelConfig &c) {
  const auto patches = in.need_stage_ints("patch_sizes", c.num_stages(), kListLengthError);
  const auto sr = in.need_stage_ints("sr_ratios", c.num_stages(), kListLengthError);
  for (size_t i = 0; i < c.num_stages(); ++i) {
    c.stages[i].patch = patches[i];
    c.stages[i].sr_ratio = sr[i];
  }
}

void write_json(const ModelConfig &c, Json &out) {
  Json patches = Json::array(), sr = Json::array();
  for (const StageConfig &s : c.stages) {
    patches.push_back(s.patch);
    sr.push_back(s.sr_ratio);
  }
  out["patch_sizes"] = patches;
  out["sr_ratios"] = sr;
}

bool allows_attention(AttentionKind kind) { return kind == AttentionKind::polarity; }

ModelGeometry geometry(const ModelConfig &c, int64_t height, int64_t width) {
  ModelGeometry g;
  g.height = height;
  g.width = width;
  int64_t h = height, w = width, channels = c.in_chans;
  for (const StageConfig &s : c.stages) {
    StageGeometry st;
    st.in_h = h;
    st.in_w = w;
    st.in_channels = channels;
    st.patch = s.patch;
    st.res_h = guarded_div(h, s.patch); // conv with kernel = stride, no padding
    st.res_w = guarded_div(w, s.patch);
    st.tokens = st.res_h * st.res_w;
    st.channels = s.dim;
    BlockGeometry b; // one window: the whole stage
    b.window_h = b.padded_h = st.res_h;
    b.window_w = b.padded_w = st.res_w;
    b.window_tokens = st.tokens;
    b.kv_h = guarded_div(st.res_h, s.sr_ratio); // conv sr x sr, stride sr, no padding
    b.kv_w = guarded_div(st.res_w, s.sr_ratio);
    b.kv_tokens = b.kv_h * b.kv_w;
    b.pos_enc_rows = b.kv_tokens; // the encoding is added to the keys
    st.blocks.assign(static_cast<size_t>(s.depth > 0 ? s.depth : 0), b);
    h = st.res_h;
    w = st.res_w;
    g.stages.push_back(std::move(st));
    channels = s.dim;
  }
  g.pooled_width = c.stages.empty() ? 0 : c.stages.back().dim;
  return g;
}

int64_t size_multiple(const ModelConfig &c) {
  int64_t m = 1;
  for (const StageConfig &s : c.stages) m *= s.patch > 0 ? s.patch : 1;
  return m;
}

void check(const ModelConfig &c, const std::string &ctx) {
  const ModelGeometry g = geometry(c, c.img_size, c.img_size);
  for (size_t i = 0; i < c.num_stages(); ++i) {
    const StageConfig &s = c.stages[i];
    check_in_range(ctx, s.patch, "patch_sizes");
    check_in_range(ctx, s.sr_ratio, "sr_ratios");
    if (g.stages[i].in_h % s.patch != 0) bad_config(ctx, "config img_size is not divisible by the patch sizes");
    if (s.sr_ratio > g.stages[i].res_h)
      bad_config(ctx, "config sr_ratio of stage " + std::to_string(i + 1) + " exceeds its resolution");
  }
}

std::string block_name(size_t stage, size_t index) {
  return "block" + std::to_string(stage + 1) + "." + std::to_string(index); // stages count from 1 in PVT keys
}

void tensors(const ModelConfig &c, const ModelGeometry &g, TensorListWriter &out) {
  for (size_t si = 0; si < c.num_stages(); ++si) {
    const StageConfig &s = c.stages[si];
    const StageGeometry &st = g.stages[si];
    const std::string i = std::to_string(si + 1);
    const int64_t dim = s.dim, p = st.patch, r = s.sr_ratio;
    out.add("patch_embed" + i + ".proj.weight", {dim, st.in_channels, p, p});
    out.add("patch_embed" + i + ".proj.bias", {dim});
    out.norm("patch_embed" + i + ".norm", dim);
    out.add("pos_embed" + i, {1, st.tokens, dim});
    for (size_t j = 0; j < st.blocks.size(); ++j) {
      const std::string b = block_name(si, j);
      out.norm(b + ".norm1", dim);
      out.linear(b + ".attn.qg", 2 * dim, dim);
      out.linear(b + ".attn.kv", 2 * dim, dim);
      out.polarity_attention(b + ".attn", dim, s.heads, c.kernel_size, st.blocks[j].pos_enc_rows);
      if (r > 1) {
        out.add(b + ".attn.sr.weight", {dim, dim, r, r});
        out.add(b + ".attn.sr.bias", {dim});
        out.norm(b + ".attn.norm", dim);
      }
      out.norm(b + ".norm2", dim);
      out.mlp(b + ".mlp", dim, s.hidden());
    }
  }
  const int64_t last = c.stages.back().dim;
  out.add("norm.weight", {last}, TensorSpec::Use::Optional); // unused by the model (SPEC section 4)
  out.add("norm.bias", {last}, TensorSpec::Use::Optional);
  out.linear("head", c.num_classes, last);
}

// Every stage: its patch-embedding conv, then blocks that attend over the whole
// stage with keys / values from the (spatially reduced) grid of n tokens.
int64_t macs(const ModelConfig &c, const ModelGeometry &g) {
  int64_t m = 0;
  for (size_t si = 0; si < c.num_stages(); ++si) {
    const StageConfig &s = c.stages[si];
    const StageGeometry &st = g.stages[si];
    const int64_t C = s.dim, N = st.tokens, ks = c.kernel_size, r = s.sr_ratio;
    m += N * C * st.in_channels * st.patch * st.patch; // patch embedding (kernel = stride)
    for (const BlockGeometry &b : st.blocks) {
      const int64_t n = b.kv_tokens;
      m += N * C * 2 * C;                                   // qg
      if (r > 1) m += n * C * C * r * r;                    // spatial-reduction conv
      m += n * C * 2 * C;                                   // kv, on the reduced tokens
      m += polarity_core_macs(N, n, s.heads, s.head_dim()); // every query against the n keys
      m += N * C * ks * ks;                                 // local branch: depthwise conv over v (interpolated to N)
      m += N * C * C;                                       // proj
      m += mlp_macs(N, C, s.hidden());
    }
  }
  return m + c.stages.back().dim * c.num_classes; // head on the pooled tokens
}

} // namespace

const FamilyRules kPvtRules = {
    Family::pvt, "pvt", read_json, write_json, allows_attention, "PVT stages use L attention only",
    check,       geometry, size_multiple, tensors, block_name, macs, &kPvtDetector,
};

} // namespace pola::model_detail
