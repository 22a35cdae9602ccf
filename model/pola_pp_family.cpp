// PolaFormer++ (PolaPP b0-b5, ../shared/SPEC-polaformerpp.md): a 4-conv
// BN/GELU stem (stride 4), four stages of blocks that each attend over the
// whole stage (polarity linear attention "L" or softmax "S", both with 2-D
// RoPE), a conv3x3 stride-2 + BN downsampling after every stage but the last,
// and a conv1x1 / BN / Swish / pool / conv1x1 head. No windows, no spatial
// reduction and no size-dependent tensor: any input size works, every stride-2
// conv (k3, p1) giving ceil(side / 2).
#include "model/family.h"

namespace pola::model_detail {
namespace {

// Kernels the authors' code fixes (SPEC-polaformerpp 1): the conditional
// position conv before each block and the FFN's depthwise conv are 3x3, as are
// the stem and downsampling convs. The LePE kernel is the config's kernel_size.
constexpr int64_t kConvKernel = 3;
constexpr int64_t kStages = 4;
// A softmax stage at the checkpoint's own size attends over N x N per head;
// beyond this many tokens the products the engine derives (N^2 x C) would
// leave int64 for configs no real model comes near (b0-b5: 196 or 49).
constexpr int64_t kMaxSoftmaxTokens = int64_t{1} << 15;

void read_json(const ConfigJsonReader &in, ModelConfig &c) { c.projection = in.need_int("projection"); }

void write_json(const ModelConfig &c, Json &out) { out["projection"] = c.projection; }

bool allows_attention(AttentionKind) { return true; }

int64_t half_up(int64_t v) { return (v + 1) / 2; } // a stride-2 conv with k3, p1

ModelGeometry geometry(const ModelConfig &c, int64_t height, int64_t width) {
  ModelGeometry g;
  g.height = height;
  g.width = width;
  int64_t h = height, w = width, channels = c.in_chans;
  for (size_t i = 0; i < c.num_stages(); ++i) {
    const StageConfig &s = c.stages[i];
    StageGeometry st;
    st.in_h = h;
    st.in_w = w;
    st.in_channels = channels;
    // Stage 1 starts after the stem's two stride-2 convs; the others after the
    // previous stage's downsampling conv.
    st.patch = i == 0 ? 4 : 2;
    st.res_h = i == 0 ? half_up(half_up(h)) : half_up(h);
    st.res_w = i == 0 ? half_up(half_up(w)) : half_up(w);
    st.tokens = st.res_h * st.res_w;
    st.channels = s.dim;
    BlockGeometry b; // one window: the whole stage, keys and values too
    b.window_h = b.padded_h = b.kv_h = st.res_h;
    b.window_w = b.padded_w = b.kv_w = st.res_w;
    b.window_tokens = b.kv_tokens = st.tokens;
    b.pos_enc_rows = 0; // RoPE tables are built from the grid, nothing is stored per size
    st.blocks.assign(static_cast<size_t>(s.depth > 0 ? s.depth : 0), b);
    h = st.res_h;
    w = st.res_w;
    g.stages.push_back(std::move(st));
    channels = s.dim;
  }
  g.pooled_width = c.projection;
  return g;
}

// ceil(side / 2) at every stride-2 conv: every side runs (SPEC-polaformerpp T9).
int64_t size_multiple(const ModelConfig &) { return 1; }

void check(const ModelConfig &c, const std::string &ctx) {
  if (static_cast<int64_t>(c.num_stages()) != kStages) bad_config(ctx, "PolaPP configs have 4 stages");
  check_in_range(ctx, c.projection, "projection");
  if (c.stages.front().dim % 2 != 0)
    bad_config(ctx, "PolaPP's stem width is embed_dims[0] / 2: embed_dims of stage 1 must be even");
  const ModelGeometry g = geometry(c, c.img_size, c.img_size);
  for (size_t i = 0; i < c.num_stages(); ++i) {
    const StageConfig &s = c.stages[i];
    const std::string st = "stage " + std::to_string(i + 1);
    // Both RoPE tables hold d/4 (softmax, width d) or d/2 (linear, width 2d)
    // angles, each used for a row half and a column half of interleaved pairs.
    if (s.head_dim() % 4 != 0)
      bad_config(ctx, "PolaPP head dim of " + st + " (" + std::to_string(s.head_dim()) +
                          ") must be divisible by 4 for its 2-D RoPE");
    if (s.attn == AttentionKind::softmax_window && g.stages[i].tokens > kMaxSoftmaxTokens)
      bad_config(ctx, "PolaPP " + st + " attends globally with softmax over " + std::to_string(g.stages[i].tokens) +
                          " tokens at img_size, more than " + std::to_string(kMaxSoftmaxTokens));
  }
}

std::string block_name(size_t stage, size_t index) {
  return "layers." + std::to_string(stage) + ".blocks." + std::to_string(index);
}

// Every BatchNorm of this family directly follows a conv with bias (stem,
// downsampling, head projection; SPEC-polaformerpp 2.2, 2.3, 2.9), with nothing
// in between, so folding it into that conv is exact up to float rounding: a
// model file holds the folded conv under the conv's names and no BN tensor.
void conv_bn(TensorListWriter &out, const std::string &conv, const std::string &bn, int64_t out_ch,
             int64_t in_ch, int64_t k) {
  out.conv(conv, out_ch, in_ch, k, /*depthwise=*/false);
  out.folded_batch_norm(bn, out_ch, conv);
}

// In the authors' state-dict order (SPEC-polaformerpp 3.2).
void tensors(const ModelConfig &c, const ModelGeometry &, TensorListWriter &out) {
  const int64_t dim0 = c.stages.front().dim, stem = dim0 / 2, k = kConvKernel;
  // patch_embed.proj: conv (0, 3, 6, 9) each followed by a BN (1, 4, 7, 10).
  const int64_t stem_in[] = {c.in_chans, stem, stem, stem}, stem_out[] = {stem, stem, stem, dim0};
  for (int64_t i = 0; i < 4; ++i) {
    conv_bn(out, "patch_embed.proj." + std::to_string(3 * i), "patch_embed.proj." + std::to_string(3 * i + 1),
            stem_out[i], stem_in[i], k);
  }
  for (size_t si = 0; si < c.num_stages(); ++si) {
    const StageConfig &s = c.stages[si];
    const int64_t C = s.dim, d = s.head_dim(), F = s.hidden(), lk = c.kernel_size;
    const bool linear = s.attn == AttentionKind::polarity;
    const std::string layer = "layers." + std::to_string(si);
    // Both angle buffers exist in every stage (T13); the one its blocks do not
    // use is dropped. The used one is kept: the float32 angles are exact (T7).
    out.add(layer + ".RoPE.angle", {d / 2}, linear ? TensorSpec::Use::Dropped : TensorSpec::Use::Required);
    out.add(layer + ".RoPE_linear.angle", {d}, linear ? TensorSpec::Use::Required : TensorSpec::Use::Dropped);
    for (int64_t j = 0; j < s.depth; ++j) {
      const std::string b = block_name(si, static_cast<size_t>(j));
      out.add(b + ".gamma_1", {1, C, 1, 1});
      out.add(b + ".gamma_2", {1, C, 1, 1});
      out.norm(b + ".norm1.norm", C);
      if (linear) {
        out.add(b + ".attn.s1", {1, s.heads, 1, 2 * d});
        out.add(b + ".attn.s2", {1, s.heads, 1, 2 * d});
      }
      out.linear(b + (linear ? ".attn.qkvg" : ".attn.qkvo"), 4 * C, C);
      out.conv(b + ".attn.lepe", C, 1, lk, /*depthwise=*/true);
      out.linear(b + ".attn.proj", C, C);
      out.norm(b + ".norm2.norm", C);
      out.linear(b + ".ffn.fc1", F, C);
      out.linear(b + ".ffn.fc2", C, F);
      out.conv(b + ".ffn.dwconv", F, 1, k, /*depthwise=*/true);
      out.conv(b + ".pos", C, 1, k, /*depthwise=*/true);
    }
    if (si + 1 < c.num_stages()) {
      const int64_t next = c.stages[si + 1].dim;
      conv_bn(out, layer + ".downsample.reduction", layer + ".downsample.norm", next, C, k);
    }
  }
  const int64_t last = c.stages.back().dim, p = c.projection;
  conv_bn(out, "proj", "norm", p, last, 1);
  out.conv("head", c.num_classes, p, 1, /*depthwise=*/false);
}

// Dense and depthwise convs at their output grids, the linears on the stage's
// tokens, the attention products, the head's 1x1 projection on the last grid
// and the classifier on the pooled vector.
int64_t macs(const ModelConfig &c, const ModelGeometry &g) {
  const int64_t kk = kConvKernel * kConvKernel, lk = c.kernel_size * c.kernel_size;
  const StageGeometry &first = g.stages.front();
  const int64_t dim0 = c.stages.front().dim, stem = dim0 / 2;
  const int64_t half = half_up(g.height) * half_up(g.width); // after the stem's first conv
  int64_t m = half * stem * c.in_chans * kk;                   // conv 0 (stride 2)
  m += 2 * half * stem * stem * kk;                            // convs 3 and 6 (stride 1)
  m += first.tokens * dim0 * stem * kk;                        // conv 9 (stride 2)
  for (size_t si = 0; si < c.num_stages(); ++si) {
    const StageConfig &s = c.stages[si];
    const int64_t C = s.dim, N = g.stages[si].tokens, F = s.hidden();
    for (int64_t j = 0; j < s.depth; ++j) {
      m += N * C * kk;     // pos: depthwise 3x3
      m += N * C * 4 * C;  // qkvg / qkvo
      m += N * C * lk;     // LePE: depthwise on V
      if (s.attn == AttentionKind::polarity)
        m += polarity_core_macs(N, N, s.heads, s.head_dim()); // the same products as PolaFormer's
      else
        m += 2 * N * N * C; // q k^T and weights x v over the whole stage
      m += N * C * C;       // proj
      m += mlp_macs(N, C, F);
      m += N * F * kk;      // the FFN's depthwise 3x3
    }
    if (si + 1 < c.num_stages()) m += g.stages[si + 1].tokens * c.stages[si + 1].dim * C * kk; // downsample
  }
  const int64_t last = c.stages.back().dim;
  m += g.stages.back().tokens * c.projection * last; // proj: 1x1 conv
  return m + c.projection * c.num_classes;           // head: 1x1 conv on the pooled vector
}

} // namespace

const FamilyRules kPolaPPRules = {
    Family::pp, "pp",     read_json, write_json, allows_attention, "", check, geometry, size_multiple, tensors,
    block_name, macs,     &kPolaPPDetector,
};

} // namespace pola::model_detail
