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

// The side of the windows stored tensors were made for: the configured
// window, clipped to the stage at the checkpoint's own size (a stage that fits
// in its window attends globally there). Positional encodings (L) have this
// many rows per side; relative-bias tables (S) cover its offsets.
int64_t checkpoint_window(int64_t configured, int64_t checkpoint_res) {
  return checkpoint_res < configured ? checkpoint_res : configured;
}

int64_t round_up(int64_t v, int64_t m) { return guarded_div(v + m - 1, m) * m; }

// Block j of a stage of res_h x res_w tokens whose checkpoint window is `window`.
BlockGeometry block_geometry(int64_t res_h, int64_t res_w, int64_t window, AttentionKind attn, size_t j) {
  BlockGeometry b;
  if (res_h <= window && res_w <= window) {
    // The stage fits in one window: it attends globally, nothing to shift or pad.
    b.window_h = b.padded_h = res_h;
    b.window_w = b.padded_w = res_w;
  } else {
    // Padded to whole windows (Swin's detection backbone); odd blocks shift by
    // half a window so that windows exchange tokens, S blocks with the region mask.
    const bool shifted = j % 2 == 1;
    b.window_h = b.window_w = window;
    b.padded_h = round_up(res_h, window);
    b.padded_w = round_up(res_w, window);
    b.shift = shifted ? window / 2 : 0;
    b.has_attn_mask = shifted;
  }
  b.windows = guarded_div(b.padded_h, b.window_h) * guarded_div(b.padded_w, b.window_w);
  b.window_tokens = b.window_h * b.window_w;
  b.kv_h = b.window_h;
  b.kv_w = b.window_w;
  b.kv_tokens = b.window_tokens;
  b.pos_enc_rows = attn == AttentionKind::polarity ? b.window_tokens : 0;
  b.partitioned = b.windows > 1 || b.shift > 0;
  return b;
}

ModelGeometry geometry(const ModelConfig &c, int64_t height, int64_t width) {
  ModelGeometry g;
  g.height = height;
  g.width = width;
  int64_t h = height, w = width, checkpoint_res = c.img_size, channels = c.in_chans;
  for (size_t i = 0; i < c.num_stages(); ++i) {
    const StageConfig &s = c.stages[i];
    StageGeometry st;
    st.in_h = h;
    st.in_w = w;
    st.in_channels = channels;
    st.patch = i == 0 ? c.patch_size : 2; // patch embedding, then 2 x 2 patch merging
    st.res_h = guarded_div(h, st.patch);
    st.res_w = guarded_div(w, st.patch);
    st.tokens = st.res_h * st.res_w;
    st.channels = s.dim;
    checkpoint_res = guarded_div(checkpoint_res, st.patch);
    const int64_t configured = s.attn == AttentionKind::polarity ? c.window_size : c.window_size_softmax;
    const int64_t window = checkpoint_window(configured, checkpoint_res);
    for (int64_t j = 0; j < s.depth; ++j)
      st.blocks.push_back(block_geometry(st.res_h, st.res_w, window, s.attn, static_cast<size_t>(j)));
    h = st.res_h;
    w = st.res_w;
    g.stages.push_back(std::move(st));
    channels = s.dim;
  }
  g.pooled_width = c.stages.empty() ? 0 : c.stages.back().dim;
  return g;
}

int64_t size_multiple(const ModelConfig &c) {
  return (c.patch_size > 0 ? c.patch_size : 1) << (c.num_stages() > 0 ? c.num_stages() - 1 : 0);
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
  const ModelGeometry g = geometry(c, c.img_size, c.img_size);
  for (size_t s = 0; s < n; ++s) {
    const int64_t res = g.stages[s].res_h;
    const BlockGeometry &b = g.stages[s].blocks.front(); // every block of a stage has the same window
    const int64_t w = b.window_h;
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

std::string block_name(size_t stage, size_t index) {
  return "layers." + std::to_string(stage) + ".blocks." + std::to_string(index);
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
      const int64_t w = geo.window_h, ww = geo.window_tokens;
      const std::string b = block_name(si, j);
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

// The patch embedding, then per stage its window blocks and the patch merging
// to the next. A block's attention runs on its windows, padding included
// (windows x window_tokens rows, more than the stage's tokens when the grid is
// padded to whole windows); its MLP on the stage's tokens.
int64_t macs(const ModelConfig &c, const ModelGeometry &g) {
  const StageGeometry &first = g.stages.front();
  int64_t m = first.tokens * first.channels * first.in_channels * first.patch * first.patch;
  for (size_t si = 0; si < c.num_stages(); ++si) {
    const StageConfig &s = c.stages[si];
    const StageGeometry &st = g.stages[si];
    const int64_t C = s.dim, N = st.tokens, ks = c.kernel_size;
    for (const BlockGeometry &b : st.blocks) {
      const int64_t t = b.window_tokens, rows = b.windows * t;
      if (s.attn == AttentionKind::polarity) {
        m += rows * C * 4 * C;                                            // qkvg
        m += b.windows * polarity_core_macs(t, t, s.heads, s.head_dim()); // per window
        m += rows * C * ks * ks;                                          // local branch: depthwise conv per window
      } else {
        m += rows * C * 3 * C;             // qkv
        m += b.windows * 2 * t * t * C;    // q k^T and weights x v, per window
      }
      m += rows * C * C;                   // proj
      m += mlp_macs(N, C, s.hidden());
    }
    // Patch merging: 2 x 2 tokens (4C) -> 2C on the next stage's grid.
    if (si + 1 < c.num_stages()) m += g.stages[si + 1].tokens * 4 * C * 2 * C;
  }
  return m + c.stages.back().dim * c.num_classes; // head on the pooled tokens
}

} // namespace

const FamilyRules kSwinRules = {
    Family::swin, "swin", read_json, write_json, allows_attention, "", check, geometry, size_multiple, tensors,
    block_name,   macs,   &kSwinDetector,
};

} // namespace pola::model_detail
