// Pola-Swin (SPEC section 5): one patch embedding, then stages of window
// blocks (polarity "L" or softmax "S") at halving resolutions, joined by
// patch merging. The window / shift rule of every block is decided here.
#include "model/family.h"

namespace pola::model_detail {
namespace {

void read_json(const ConfigJsonReader &in, ModelConfig &c) {
  c.patch_size = in.need_int("patch_size");
  c.window_size = in.need_int("window_size");
  c.window_size_softmax = in.need_int("window_size_softmax");
}

void write_json(const ModelConfig &c, Json &out) {
  out["patch_size"] = c.patch_size;
  out["window_size"] = c.window_size;
  out["window_size_softmax"] = c.window_size_softmax;
}

bool allows_attention(AttentionKind) { return true; }

// Block j of a stage of side `res` whose blocks use `configured` windows.
BlockGeometry block_geometry(int64_t res, int64_t configured, AttentionKind attn, size_t j) {
  BlockGeometry b;
  if (res <= configured) {
    // The stage fits in one window: it attends globally, nothing to shift.
    b.window = res;
  } else {
    // Odd blocks shift by half a window so that windows exchange tokens; the
    // reference registers their region mask as the buffer attn_mask.
    const bool shifted = j % 2 == 1;
    b.window = configured;
    b.shift = shifted ? configured / 2 : 0;
    b.has_attn_mask = shifted;
  }
  const int64_t per_side = guarded_div(res, b.window);
  b.windows = per_side * per_side;
  b.window_tokens = b.window * b.window;
  b.kv_side = b.window;
  b.kv_tokens = b.window_tokens;
  b.pos_enc_rows = attn == AttentionKind::polarity ? b.window_tokens : 0;
  b.partitioned = b.window < res || b.shift > 0;
  return b;
}

ModelGeometry geometry(const ModelConfig &c) {
  ModelGeometry g;
  int64_t side = c.img_size, channels = c.in_chans;
  for (size_t i = 0; i < c.num_stages(); ++i) {
    const StageConfig &s = c.stages[i];
    StageGeometry st;
    st.in_side = side;
    st.in_channels = channels;
    st.patch = i == 0 ? c.patch_size : 2; // patch embedding, then 2 x 2 patch merging
    st.res = guarded_div(side, st.patch);
    st.tokens = st.res * st.res;
    st.channels = s.dim;
    const int64_t configured = s.attn == AttentionKind::polarity ? c.window_size : c.window_size_softmax;
    for (int64_t j = 0; j < s.depth; ++j) st.blocks.push_back(block_geometry(st.res, configured, s.attn, j));
    g.stages.push_back(std::move(st));
    side = g.stages.back().res;
    channels = s.dim;
  }
  return g;
}

void check(const ModelConfig &c, const std::string &ctx) {
  const size_t n = c.num_stages();
  check_in_range(ctx, c.patch_size, "patch_size");
  check_in_range(ctx, c.window_size, "window_size");
  check_in_range(ctx, c.window_size_softmax, "window_size_softmax");
  for (size_t s = 0; s + 1 < n; ++s)
    if (c.stages[s + 1].dim != 2 * c.stages[s].dim) bad_config(ctx, "Swin embed_dims must double from stage to stage");
  if (c.img_size % (c.patch_size << (n - 1)) != 0)
    bad_config(ctx, "config img_size is not divisible by patch_size * 2^(stages-1)");
  const ModelGeometry g = geometry(c);
  for (size_t s = 0; s < n; ++s) {
    const int64_t res = g.stages[s].res;
    const BlockGeometry &b = g.stages[s].blocks.front(); // every block of a stage has the same window
    const int64_t w = b.window;
    if (res % w != 0)
      bad_config(ctx, "Swin stage " + std::to_string(s + 1) + " resolution " + std::to_string(res) +
                          " is not a multiple of its window " + std::to_string(w));
    // Softmax blocks expand their (2w-1)^2 bias table to heads x t x t floats
    // and build a windows x t x t mask (t = w*w): a small table in the file
    // must not buy gigabytes. The released models need under a million floats.
    constexpr int64_t kMaxTableFloats = int64_t{1} << 26;
    const int64_t t = b.window_tokens, mask_windows = b.partitioned ? b.windows : 0;
    if (c.stages[s].attn == AttentionKind::softmax_window &&
        (t > (int64_t{1} << 13) || c.stages[s].heads > kMaxTableFloats / (t * t) ||
         mask_windows > kMaxTableFloats / (t * t)))
      bad_config(ctx, "Swin stage " + std::to_string(s + 1) + ": softmax window " + std::to_string(w) + " with " +
                          std::to_string(c.stages[s].heads) + " heads needs attention tables over " +
                          std::to_string(kMaxTableFloats) + " floats");
  }
}

void tensors(const ModelConfig &c, const ModelGeometry &g, TensorListWriter &out) {
  const int64_t p = c.patch_size, dim0 = c.stages.front().dim;
  out.add("patch_embed.proj.weight", {dim0, c.in_chans, p, p});
  out.add("patch_embed.proj.bias", {dim0});
  out.norm("patch_embed.norm", dim0);
  for (size_t si = 0; si < c.num_stages(); ++si) {
    const StageConfig &s = c.stages[si];
    const int64_t dim = s.dim, heads = s.heads;
    for (size_t j = 0; j < g.stages[si].blocks.size(); ++j) {
      const BlockGeometry &geo = g.stages[si].blocks[j];
      const int64_t w = geo.window, ww = geo.window_tokens;
      const std::string b = "layers." + std::to_string(si) + ".blocks." + std::to_string(j);
      out.norm(b + ".norm1", dim);
      if (s.attn == AttentionKind::polarity) {
        out.linear(b + ".attn.qkvg", 4 * dim, dim);
        out.polarity_attention(b + ".attn", dim, heads, c.kernel_size, geo.pos_enc_rows);
      } else {
        out.linear(b + ".attn.qkv", 3 * dim, dim);
        out.linear(b + ".attn.proj", dim, dim);
        out.add(b + ".attn.relative_position_bias_table", {(2 * w - 1) * (2 * w - 1), heads});
        out.add(b + ".attn.relative_position_index", {ww, ww}, TensorSpec::Use::Dropped);
      }
      if (geo.has_attn_mask) out.add(b + ".attn_mask", {geo.windows, ww, ww}, TensorSpec::Use::Dropped);
      out.norm(b + ".norm2", dim);
      out.mlp(b + ".mlp", dim, s.hidden());
    }
    if (si + 1 < c.num_stages()) {
      const std::string d = "layers." + std::to_string(si) + ".downsample";
      out.norm(d + ".norm", 4 * dim);
      out.linear(d + ".reduction", 2 * dim, 4 * dim, /*bias=*/false);
    }
  }
  out.norm("norm", c.stages.back().dim);
  out.linear("head", c.num_classes, c.stages.back().dim);
}

} // namespace

const FamilyRules kSwinRules = {
    Family::swin, "swin", read_json, write_json, allows_attention, "", check, geometry, tensors,
};

} // namespace pola::model_detail
