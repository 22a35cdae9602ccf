// Pola-Swin (SPEC section 5): patch embedding, stages of shifted-window blocks
// whose attention is polarity linear ("L") or classic softmax ("S"), patch
// merging between stages, final LayerNorm, mean pooling, classifier.
#include <cmath>
#include <string>

#include "engine/models/builders.h"
#include "engine/models/layers.h"
#include "engine/models/polarity_core.h"
#include "engine/models/swin_tables.h"
#include "engine/ops/patch_merge.h"
#include "engine/ops/token_ops.h"
#include "engine/ops/window_partition.h"
#include "kernels/registry.h"

namespace pola::models {
namespace {

constexpr float kEps = 1e-5f;

// One block; its window, shift and padding come from the model geometry
// (model/geometry.h): `geo` at the run's size, `stored` at the checkpoint's
// (the window its positional encoding or relative-bias table was made for).
void add_swin_block(BuildContext &ctx, const std::string &pre, const StageConfig &s, const StageGeometry &stage,
                    const BlockGeometry &geo, const BlockGeometry &stored, const TensorRef &x) {
  Plan &plan = ctx.plan;
  const int64_t B = plan.batch, C = s.dim, t = geo.window_tokens;
  const int64_t wh = geo.window_h, ww = geo.window_w, stored_w = stored.window_h;
  const int64_t M = B * stage.tokens, windows = B * geo.windows;
  const int heads = static_cast<int>(s.heads);
  const int64_t d = s.head_dim();
  const int64_t hidden = s.hidden();
  const bool partitioned = geo.partitioned;
  ops::WindowGrid grid{B, stage.res_h, stage.res_w, C, wh, geo.shift, geo.padded_h, geo.padded_w};
  // Rows the attention works on: the tokens, or the padded windows.
  const int64_t Mw = partitioned ? grid.window_rows() : M;

  // norm1's rows feed only the qkv(g) GEMMs: held in their dtype.
  const DType gemm = dtype_of(ctx.precisions.gemm);
  const TensorRef xn = new_tensor(ctx, pre + ".norm1", M, C, gemm);
  add_layernorm(ctx, pre + ".norm1", pre + ".norm1", x, xn, kEps);
  TensorRef src = xn;
  if (partitioned) {
    src = new_tensor(ctx, pre + ".partition", Mw, C, gemm);
    add_node(ctx, pre + ".partition", {xn}, {src}, [grid, &plan](const NodeArgs &io) {
      const TensorView &from = io.in(0), &to = io.out(0);
      if (from.dtype() == DType::bf16) ops::window_partition(grid, from.bf16(), to.bf16(), plan.threads);
      else ops::window_partition(grid, from.f32(), to.f32(), plan.threads);
    });
  }

  const TensorRef attn = new_tensor(ctx, pre + ".attn.core", Mw, C);
  TensorRef attn_out = attn; // what the output projection reads
  if (s.attn == AttentionKind::polarity) {
    const TensorRef qkg = new_tensor(ctx, pre + ".attn.qkg", Mw, 3 * C);
    const TensorRef v = new_tensor(ctx, pre + ".attn.v", Mw, C);
    // qkvg is C -> 4C in the order q, k, v, g; v gets its own dense buffer
    // because the depthwise branch reads it as an image.
    add_linear_rows(ctx, pre + ".attn.qkg", pre + ".attn.qkvg", 4 * C, {{0, C}, {C, C}, {3 * C, C}}, src, qkg);
    add_linear_rows(ctx, pre + ".attn.v", pre + ".attn.qkvg", 4 * C, {{2 * C, C}}, src, v);
    PolarityCoreArgs a;
    a.prefix = pre + ".attn";
    a.sequences = windows; a.n_q = t; a.n_k = t; a.grid_h = wh; a.grid_w = ww;
    a.pe_h = a.pe_w = stored_w; a.kv_h = wh; a.kv_w = ww;
    a.heads = heads; a.head_dim = static_cast<int>(d);
    a.q = qkg.columns(0, C); a.k = qkg.columns(C, C); a.g = qkg.columns(2 * C, C);
    a.v = v; a.v_full = v; a.out = attn;
    attn_out = add_polarity_core(ctx, a);
  } else {
    const TensorRef qkv = new_tensor(ctx, pre + ".attn.qkv", Mw, 3 * C);
    add_linear(ctx, pre + ".attn.qkv", pre + ".attn.qkv", src, qkv);
    const int64_t side = 2 * stored_w - 1;
    const float *table = ctx.weights.get(pre + ".attn.relative_position_bias_table", {side * side, heads});
    // Stored index and mask buffers are recomputed from the geometry, never trusted.
    ctx.weights.ignore(pre + ".attn.relative_position_index");
    ctx.weights.ignore(pre + ".attn_mask");
    const float *bias = ctx.size_table(heads * t * t, [&] { return expand_relative_bias(table, stored_w, wh, ww, heads); });
    const float *mask = nullptr;
    int64_t n_mask = 0;
    if (geo.shift > 0) {
      mask = ctx.size_table(geo.windows * t * t, [&] { return shifted_window_mask(geo.padded_h, geo.padded_w, wh, geo.shift); });
      n_mask = geo.windows;
    }
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
    // The products in the plan's attention precision where the registry has
    // a kernel for it on this CPU and window shape, else f32.
    kernels::WindowAttnArgs shape;
    shape.tokens = static_cast<int>(t);
    shape.heads = heads;
    shape.head_dim = static_cast<int>(d);
    const auto window = kernels::resolve<kernels::Op::window_attention>(dtype_of(ctx.precisions.attention), shape);
    add_node(ctx, pre + ".attn.core", {qkv}, {attn}, [=, &plan](const NodeArgs &io) {
      const TensorView &in = io.in(0), &out = io.out(0);
      kernels::WindowAttnArgs k = shape;
      k.windows = windows;
      k.scale = scale;
      k.qkv = in.f32(); k.ld_qkv = in.ld();
      k.bias = bias; k.mask = mask; k.n_mask = n_mask;
      k.out = out.f32(); k.ld_out = out.ld();
      k.threads = plan.threads;
      window.fn(k);
    }, precision_of(window.dtype));
  }

  if (partitioned) {
    const TensorRef projected = new_tensor(ctx, pre + ".attn.proj", Mw, C);
    add_linear(ctx, pre + ".attn.proj", pre + ".attn.proj", attn_out, projected);
    // out(0) is in(1): the windows added back into the residual stream.
    add_node(ctx, pre + ".attn", {projected, x}, {x}, [grid, &plan](const NodeArgs &io) {
      ops::window_reverse_add(grid, io.in(0).f32(), io.out(0).f32(), plan.threads);
    });
  } else {
    add_linear(ctx, pre + ".attn", pre + ".attn.proj", attn_out, x, LinearEpilogue::into_residual());
  }

  add_mlp_residual(ctx, pre, x, hidden, kEps);
}

} // namespace

void build_swin(BuildContext &ctx) {
  Plan &plan = ctx.plan;
  const ModelConfig &cfg = ctx.cfg;
  const int64_t B = plan.batch;
  const ModelGeometry geometry = model_geometry(cfg, plan.key.height, plan.key.width);
  const ModelGeometry stored = model_geometry(cfg);  // the windows of the checkpoint's tables
  const size_t last = last_needed_stage(plan.key, cfg.stages.size());
  const StageGeometry &first = geometry.stages[0];
  const int64_t C0 = first.channels, M0 = B * first.tokens;

  const TensorRef embedded = new_tensor(ctx, "patch_embed.proj", M0, C0);
  ops::PatchGrid grid{B, first.in_channels, first.in_h, first.in_w, first.patch, true};
  add_patch_conv(ctx, "patch_embed.proj", "patch_embed.proj", grid, plan.input, embedded);
  TensorRef x = new_tensor(ctx, "layers.0.x", M0, C0);  // the residual stream, updated in place
  add_layernorm(ctx, "patch_embed", "patch_embed.norm", embedded, x, kEps);

  for (size_t si = 0; si <= last; ++si) {
    const StageConfig &s = cfg.stages[si];
    const StageGeometry &stage_geo = geometry.stages[si];
    const int64_t C = s.dim;
    const std::string stage = "layers." + std::to_string(si);
    for (size_t j = 0; j < stage_geo.blocks.size(); ++j)
      add_swin_block(ctx, stage + ".blocks." + std::to_string(j), s, stage_geo, stage_geo.blocks[j],
                     stored.stages[si].blocks[j], x);
    add_stage_result(ctx, si, x);
    if (si + 1 < cfg.stages.size() && si < last) {
      const int64_t M2 = B * geometry.stages[si + 1].tokens; // patch merging halves each side
      const int64_t h = stage_geo.res_h, w = stage_geo.res_w;
      const TensorRef merged = new_tensor(ctx, stage + ".downsample.gather", M2, 4 * C);
      const TensorRef merged_n =
          new_tensor(ctx, stage + ".downsample.norm", M2, 4 * C, dtype_of(ctx.precisions.gemm));
      add_node(ctx, stage + ".downsample.gather", {x}, {merged}, [B, h, w, C, &plan](const NodeArgs &io) {
        ops::patch_merge_gather(io.in(0).f32(), io.out(0).f32(), B, h, w, C, plan.threads);
      });
      add_layernorm(ctx, stage + ".downsample.norm", stage + ".downsample.norm", merged, merged_n, kEps);
      const TensorRef next = new_tensor(ctx, "layers." + std::to_string(si + 1) + ".x", M2, 2 * C);
      add_linear(ctx, stage + ".downsample", stage + ".downsample.reduction", merged_n, next,
                 LinearEpilogue::without_bias());
      x = next;
    }
  }
  if (!plan.key.pooled && !plan.key.logits) return;
  const int64_t C = cfg.stages.back().dim, N = geometry.stages.back().tokens;
  const TensorRef xn = new_tensor(ctx, "norm", B * N, C);
  add_layernorm(ctx, "norm", "norm", x, xn, kEps);
  add_pool_and_head(ctx, xn);
}

} // namespace pola::models
