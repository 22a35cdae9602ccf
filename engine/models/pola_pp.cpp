// PolaFormer++ (../shared/SPEC-polaformerpp.md): a conv stem, four stages of
// blocks attending over the whole stage (polarity linear attention with the
// exp feature map in stages 1-2, softmax in 3-4, both with 2-D RoPE and a
// 5x5 LePE on V), conv downsampling, and a 1x1 conv / Swish / pool / 1x1 conv
// head. Every BatchNorm was folded into the conv before it when the model was
// converted, so the convs here carry the folded weights.
//
// Activations are token rows (NHWC): the authors' LayerNorm2d normalises a
// pixel's channels, which is a row's LayerNorm here, and their 1x1 convs and
// linears are GEMMs on rows.
#include <cmath>
#include <string>

#include "engine/models/builders.h"
#include "engine/models/layers.h"
#include "engine/models/polarity_core.h"
#include "engine/ops/conv2d.h"
#include "engine/ops/token_ops.h"
#include "kernels/registry.h"

namespace pola::models {
namespace {

using kernels::Op;

constexpr float kNormEps = 1e-6f; // LayerNorm2d (SPEC-polaformerpp T6)
constexpr int kConvKernel = 3;    // the stem, downsampling, position and FFN convs

// A 2-D RoPE table over an h x w grid, `width` features wide, from the stored
// angle buffer (width / 2: each angle twice, T7): the first half of the
// features turns with the row, the second with the column.
kernels::RopeTable rope_table(BuildContext &ctx, const std::string &angle_name, int64_t width, int64_t h,
                              int64_t w) {
  const float *angle = ctx.weights.get(angle_name, {width / 2});
  const int64_t n = h * w, half = width / 2;
  const float *t = ctx.size_table(2 * n * width, [&] {
    std::vector<float> table(2 * n * width);
    float *cos_t = table.data(), *sin_t = table.data() + n * width;
    for (int64_t r = 0; r < h; ++r)
      for (int64_t c = 0; c < w; ++c)
        for (int64_t k = 0; k < width; ++k) {
          // As the authors' float32 code: the position times the angle, rounded to float.
          const float a = k < half ? float(r) * angle[k] : float(c) * angle[k - half];
          cos_t[(r * w + c) * width + k] = std::cos(a);
          sin_t[(r * w + c) * width + k] = std::sin(a);
        }
    return table;
  });
  kernels::RopeTable rope;
  rope.width = width;
  if (t) {
    rope.cos = t;
    rope.sin = t + n * width;
  }
  return rope;
}

// Node `name`: a dense k3 convolution (pad 1) of `prefix` over the token
// rows `src`, in the precision they are held for (f32, or bf16 for a bf16
// conv), into f32 rows `dst`, with GELU over them in place when asked.
void add_conv3(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorRef &src,
               int64_t in_h, int64_t in_w, int64_t stride, const TensorRef &dst, bool gelu) {
  ops::Conv2dShape cs;
  cs.batch = ctx.plan.batch;
  cs.in_ch = src.cols;
  cs.in_h = in_h;
  cs.in_w = in_w;
  cs.out_ch = dst.cols;
  cs.kernel = kConvKernel;
  cs.stride = stride;
  cs.pad = kConvKernel / 2;
  cs.precision = precision_of(src.dtype());
  const StoredWeight w = ctx.weights.get_stored(prefix + ".weight", {dst.cols, src.cols, kConvKernel, kConvKernel});
  const float *b = ctx.weights.get(prefix + ".bias", {dst.cols});
  auto *conv = ctx.make<ops::Conv2d>(cs, w.data, w.dtype == weights::StoredDtype::bf16, b, ctx.packed);
  Plan &plan = ctx.plan;
  const auto gelu_fn = gelu ? kernels::resolve<Op::gelu, DType::f32>().fn : nullptr;
  add_node(ctx, name, {src}, {dst}, [conv, gelu_fn, &plan](const NodeArgs &io) {
    const TensorView &y = io.out(0);
    conv->run(plan.stream, io.in(0).data(), y.f32());
    if (gelu_fn) gelu_fn(y.f32(), y.rows() * y.cols(), plan.threads);
  }, cs.precision);
}

// A stem conv (+ folded BN) and its GELU, whose result is the source of the
// next conv, computed in `next`: f32 rows GELU'd in place by the conv's node,
// or bf16 rows that gelu's bf16 kernel writes from the conv's f32 result in
// one pass (node `name.gelu`), so no separate rounding pass reads them again.
TensorRef add_stem_conv(BuildContext &ctx, const std::string &name, const TensorRef &src, int64_t in_h,
                        int64_t in_w, int64_t stride, int64_t out_ch, Precision next) {
  const int64_t out_rows = ctx.plan.batch * ((in_h - 1) / stride + 1) * ((in_w - 1) / stride + 1);
  const TensorRef y = new_tensor(ctx, name, out_rows, out_ch);
  if (next == Precision::fp32) {
    add_conv3(ctx, name, name, src, in_h, in_w, stride, y, /*gelu=*/true);
    return y;
  }
  add_conv3(ctx, name, name, src, in_h, in_w, stride, y, /*gelu=*/false);
  const TensorRef act = new_tensor(ctx, name + ".gelu", out_rows, out_ch, dtype_of(next));
  Plan &plan = ctx.plan;
  const auto gelu = kernels::resolve<Op::gelu, DType::bf16>().fn;
  add_node(ctx, name + ".gelu", {y}, {act}, [gelu, &plan](const NodeArgs &io) {
    const TensorView &a = io.in(0), &o = io.out(0);
    gelu(a.f32(), a.ld(), o.bf16(), o.ld(), a.rows(), a.cols(), plan.threads);
  }, Precision::bf16);
  return act;
}

// Node `name`: dst = depthwise k x k conv of `prefix` over src (+ src with
// add_src, + dst with accumulate) on the stage grid; a bf16 dst gets the
// result rounded to bf16.
void add_depthwise(BuildContext &ctx, const std::string &name, const std::string &prefix, int kernel,
                   const StageGeometry &g, const TensorRef &src, const TensorRef &dst, bool add_src,
                   bool accumulate) {
  const int64_t c = src.cols;
  kernels::DepthwiseConvArgs shape;
  shape.batch = ctx.plan.batch;
  shape.height = g.res_h;
  shape.width = g.res_w;
  shape.channels = c;
  shape.kernel = kernel;
  shape.weight = ctx.weights.get(prefix + ".weight", {c, 1, kernel, kernel});
  shape.bias = ctx.weights.get(prefix + ".bias", {c});
  shape.add_src = add_src;
  shape.accumulate = accumulate;
  const auto conv = kernels::resolve<Op::depthwise_conv, DType::f32>().fn;
  Plan &plan = ctx.plan;
  std::vector<TensorRef> inputs{src};
  if (accumulate) inputs.push_back(dst);
  // A bf16 dst holds the fp32 result rounded for the bf16 GEMM that reads it
  // (as LayerNorm keyed bf16): the node is recorded as bf16.
  const bool to_bf16 = dst.dtype() == DType::bf16;
  add_node(ctx, name, std::move(inputs), {dst}, [shape, conv, to_bf16, &plan](const NodeArgs &io) {
    kernels::DepthwiseConvArgs a = shape;
    a.src = io.in(0).f32();
    a.ld_src = io.in(0).ld();
    if (to_bf16)
      a.dst_bf16 = io.out(0).bf16();
    else
      a.dst = io.out(0).f32();
    a.ld_dst = io.out(0).ld();
    a.threads = plan.threads;
    conv(a);
  }, to_bf16 ? Precision::bf16 : Precision::fp32);
}

// sigmoid(s) of a polarity block's s1 / s2, (heads * 2d), once at load.
const float *sigmoid_of(BuildContext &ctx, const std::string &name, int64_t heads, int64_t d) {
  const float *s = ctx.weights.get(name, {1, heads, 1, 2 * d});
  return ctx.weights.derived(name + ":sigmoid", [&] {
    std::vector<float> y(heads * 2 * d);
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(1.0 / (1.0 + std::exp(-double(s[i]))));
    return y;
  });
}

// A node function running an attention kernel once per image of the batch:
// q, k, v (inputs 0-2) and out (output 0) at that image's `tokens` rows.
template <class Args, class Kernel>
NodeFn per_image(const Args &shape, Kernel kernel, int64_t images, int64_t tokens, const Plan &plan) {
  return [shape, kernel, images, tokens, &plan](const NodeArgs &io) {
    for (int64_t b = 0; b < images; ++b) {
      Args a = shape;
      const int64_t row = b * tokens;
      a.q = io.in(0).f32() + row * io.in(0).ld();
      a.ld_q = io.in(0).ld();
      a.k = io.in(1).f32() + row * io.in(1).ld();
      a.ld_k = io.in(1).ld();
      a.v = io.in(2).f32() + row * io.in(2).ld();
      a.ld_v = io.in(2).ld();
      a.out = io.out(0).f32() + row * io.out(0).ld();
      a.ld_out = io.out(0).ld();
      a.threads = plan.threads;
      kernel(a);
    }
  };
}

// The attention core of a block: out = attention(q, k, v) per image, from the
// [Q | K | V | G] rows y, linear (polarity, exp map) or softmax.
void add_attention_core(BuildContext &ctx, const std::string &pre, const StageConfig &s, const StageGeometry &g,
                        const kernels::RopeTable &rope, const TensorRef &y, const TensorRef &out) {
  const int64_t C = s.dim, N = g.tokens, B = ctx.plan.batch;
  const int heads = static_cast<int>(s.heads), d = static_cast<int>(s.head_dim());
  Plan &plan = ctx.plan;
  const std::vector<TensorRef> qkv{y.columns(0, C), y.columns(C, C), y.columns(2 * C, C)};
  if (s.attn == AttentionKind::polarity) {
    kernels::PolarityAttnArgs shape;
    shape.heads = heads;
    shape.head_dim = d;
    shape.n_q = shape.n_k = N;
    shape.feature.kind = kernels::FeatureKind::exp_sigmoid;
    shape.feature.sigma_same = sigmoid_of(ctx, pre + ".s1", heads, d);
    shape.feature.sigma_opp = sigmoid_of(ctx, pre + ".s2", heads, d);
    shape.rope = rope;
    // The exp map stays fp32 in every precision (SPEC-polaformerpp T1): the
    // registry has no bf16 kernel for it, so a bf16 request falls back and
    // the node records what runs.
    const auto core = kernels::resolve<Op::polarity_attention>(dtype_of(ctx.precisions.attention), shape);
    if (!core) throw std::logic_error("no polarity-attention kernel for " + pre);
    add_node(ctx, pre + ".core", qkv, {out}, per_image(shape, core.fn, B, N, plan), precision_of(core.dtype));
    return;
  }
  kernels::GlobalAttnArgs shape;
  shape.n = N;
  shape.heads = heads;
  shape.head_dim = d;
  shape.scale = static_cast<float>(1.0 / std::sqrt(double(d)));
  shape.rope = rope;
  const auto core = kernels::resolve<Op::softmax_attention, DType::f32>(shape);
  if (!core) throw std::logic_error("no softmax-attention kernel for " + pre);
  add_node(ctx, pre + ".core", qkv, {out}, per_image(shape, core.fn, B, N, plan));
}

// One block (SPEC-polaformerpp 2.4): x = x + pos(x); x += g1 * Attn(LN1(x));
// x += g2 * FFN(LN2(x)). Returns the block's output stream (the last node is
// named `pre`).
TensorRef add_block(BuildContext &ctx, const std::string &pre, const StageConfig &s, const StageGeometry &g,
                    const kernels::RopeTable &rope, const TensorRef &x_in) {
  const int64_t C = s.dim, M = x_in.rows, F = s.hidden();
  const DType gemm = dtype_of(ctx.precisions.gemm);
  const bool linear = s.attn == AttentionKind::polarity;

  const TensorRef x = new_tensor(ctx, pre + ".pos", M, C);
  add_depthwise(ctx, pre + ".pos", pre + ".pos", kConvKernel, g, x_in, x, /*add_src=*/true, false);

  const TensorRef xn = new_tensor(ctx, pre + ".norm1", M, C, gemm);
  add_layernorm(ctx, pre + ".norm1", pre + ".norm1.norm", x, xn, kNormEps);
  const std::string proj_in = pre + (linear ? ".attn.qkvg" : ".attn.qkvo");
  const TensorRef y = new_tensor(ctx, proj_in, M, 4 * C);
  add_linear(ctx, proj_in, proj_in, xn, y);
  const TensorRef a = new_tensor(ctx, pre + ".attn.core", M, C);
  add_attention_core(ctx, pre + ".attn", s, g, rope, y, a);
  // LePE on the whole V, added before the gate (T5).
  add_depthwise(ctx, pre + ".attn.lepe", pre + ".attn.lepe", static_cast<int>(ctx.cfg.kernel_size), g,
                y.columns(2 * C, C), a, false, /*accumulate=*/true);
  const TensorRef gated = add_gate(ctx, pre + ".attn.gate", a, y.columns(3 * C, C));
  add_linear_scaled_into(ctx, pre + ".attn", pre + ".attn.proj", pre + ".gamma_1", {1, C, 1, 1}, gated, x);

  const TensorRef xn2 = new_tensor(ctx, pre + ".norm2", M, C, gemm);
  add_layernorm(ctx, pre + ".norm2", pre + ".norm2.norm", x, xn2, kNormEps);
  const TensorRef u = new_tensor(ctx, pre + ".ffn.fc1", M, F);
  add_linear(ctx, pre + ".ffn.fc1", pre + ".ffn.fc1", xn2, u, LinearEpilogue::then_gelu());
  // The FFN's inner conv writes fc2's source in fc2's dtype (no rounding pass).
  const TensorRef u2 = new_tensor(ctx, pre + ".ffn.dwconv", M, F, gemm);
  add_depthwise(ctx, pre + ".ffn.dwconv", pre + ".ffn.dwconv", kConvKernel, g, u, u2, /*add_src=*/true, false);
  add_linear_scaled_into(ctx, pre, pre + ".ffn.fc2", pre + ".gamma_2", {1, C, 1, 1}, u2, x);
  return x;
}

} // namespace

void build_pola_pp(BuildContext &ctx) {
  Plan &plan = ctx.plan;
  const ModelConfig &cfg = ctx.cfg;
  const int64_t B = plan.batch;
  const ModelGeometry geo = model_geometry(cfg, plan.key.height, plan.key.width);
  const size_t last = last_needed_stage(plan.key, cfg.stages.size());

  // Stem (2.2): convs 0, 3, 6 (+ folded BN, GELU) at half size, conv 9 (+ folded BN) to stage 1.
  const StageGeometry &first = geo.stages.front();
  const int64_t stem = cfg.stages.front().dim / 2, h2 = (first.in_h + 1) / 2, w2 = (first.in_w + 1) / 2;
  // The image as rows first: oneDNN's convolution from a planar source into
  // rows is a slow generic path, a transpose of 3 channels is nothing.
  const int64_t pixels = first.in_h * first.in_w, in_ch = cfg.in_chans;
  const TensorRef rows = new_tensor(ctx, "image_rows", B * pixels, in_ch);
  add_node(ctx, "image_rows", {plan.input}, {rows}, [B, in_ch, pixels, &plan](const NodeArgs &io) {
    ops::image_to_rows(io.in(0).f32(), io.out(0).f32(), B, in_ch, pixels, plan.threads);
  });
  // The stem and downsampling convs run in the embedding precision, except
  // the first: over 3 channels its products are 27 deep, too short for bf16
  // to gain, and a bf16 copy of the image rows would cost a pass of its own.
  const Precision embed = ctx.precisions.embed;
  const TensorRef s0 = add_stem_conv(ctx, "patch_embed.proj.0", rows, first.in_h, first.in_w, 2, stem, embed);
  const TensorRef s1 = add_stem_conv(ctx, "patch_embed.proj.3", s0, h2, w2, 1, stem, embed);
  const TensorRef s2 = add_stem_conv(ctx, "patch_embed.proj.6", s1, h2, w2, 1, stem, embed);
  TensorRef x = new_tensor(ctx, "patch_embed", B * first.tokens, cfg.stages.front().dim);
  add_conv3(ctx, "patch_embed", "patch_embed.proj.9", s2, h2, w2, 2, x, false);

  for (size_t si = 0; si <= last; ++si) {
    const StageConfig &s = cfg.stages[si];
    const StageGeometry &g = geo.stages[si];
    const std::string layer = "layers." + std::to_string(si);
    if (si > 0) {
      const StageGeometry &prev = geo.stages[si - 1];
      const std::string name = "layers." + std::to_string(si - 1) + ".downsample";
      const TensorRef down = new_tensor(ctx, name, B * g.tokens, s.dim);
      add_conv3(ctx, name, name + ".reduction", gemm_source(ctx, name, x, embed), prev.res_h, prev.res_w, 2, down,
                false);
      x = down;
    }
    // The stage's RoPE table, shared by its blocks: width 2d for the linear
    // blocks' features, d for the softmax blocks' q and k. The other buffer
    // is not in the model file (the converter drops it).
    const bool linear = s.attn == AttentionKind::polarity;
    const int64_t d = s.head_dim();
    const kernels::RopeTable rope = linear ? rope_table(ctx, layer + ".RoPE_linear.angle", 2 * d, g.res_h, g.res_w)
                                           : rope_table(ctx, layer + ".RoPE.angle", d, g.res_h, g.res_w);
    for (size_t j = 0; j < g.blocks.size(); ++j)
      x = add_block(ctx, layer + ".blocks." + std::to_string(j), s, g, rope, x);
    add_stage_result(ctx, si, x);
  }
  const PlanKey &key = plan.key;
  if (!key.pooled && !key.logits) return;
  // Head (2.9): 1x1 conv (+ folded BN), Swish, then pool and classifier.
  const TensorRef p = new_tensor(ctx, "proj", x.rows, cfg.projection);
  add_linear(ctx, "proj", "proj", x, p);
  const auto swish = kernels::resolve<Op::swish, DType::f32>().fn;
  add_node(ctx, "swish", {p}, {p}, [swish, &plan](const NodeArgs &io) {
    const TensorView &t = io.out(0);
    swish(t.f32(), t.rows() * t.cols(), plan.threads);
  });
  add_pool_and_head(ctx, p);
}

} // namespace pola::models
