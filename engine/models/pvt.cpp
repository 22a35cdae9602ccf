// Pola-PVT (SPEC section 4): four stages of patch embedding + polarity blocks,
// mean pooling, classifier. No final LayerNorm: the checkpoint's `norm.*` is
// unused by the reference, so it is ignored here too.
#include <string>

#include "engine/models/builders.h"
#include "engine/models/layers.h"
#include "engine/models/polarity_core.h"
#include "engine/ops/token_ops.h"
#include "kernels/kernels.h"

namespace pola::models {
namespace {

constexpr float kBlockEps = 1e-6f;  // norm1, norm2
constexpr float kEmbedEps = 1e-5f;  // patch-embedding norm and spatial-reduction norm

// `geo` at the run's size, `stored` at the checkpoint's (the positional
// encoding's grid).
void add_pvt_block(BuildContext &ctx, const std::string &pre, const StageConfig &s, const StageGeometry &stage,
                   const BlockGeometry &geo, const BlockGeometry &stored, const TensorRef &x) {
  Plan &plan = ctx.plan;
  const int64_t B = plan.batch, C = s.dim, N = stage.tokens, M = B * N;
  const int64_t sr = s.sr_ratio, n = geo.kv_tokens;
  const int64_t hidden = s.hidden();

  // norm1's rows feed the qg GEMM and the spatial reduction (a GEMM on
  // patches): held in the GEMM precision, as is the reduced norm for kv.
  const DType gemm = dtype_of(ctx.precisions.gemm);
  const TensorRef xn = new_tensor(ctx, pre + ".norm1", M, C, gemm);
  add_layernorm(ctx, pre + ".norm1", pre + ".norm1", x, xn, kBlockEps);
  const TensorRef qg = new_tensor(ctx, pre + ".attn.qg", M, 2 * C);
  add_linear(ctx, pre + ".attn.qg", pre + ".attn.qg", xn, qg);

  TensorRef kv_src = xn;
  if (sr > 1) {
    // Spatial reduction: conv r x r stride r on the normed tokens, then LayerNorm.
    const TensorRef reduced = new_tensor(ctx, pre + ".attn.sr", B * n, C);
    ops::PatchGrid grid{B, C, stage.res_h, stage.res_w, sr, false};
    add_patch_conv(ctx, pre + ".attn.sr", pre + ".attn.sr", grid, xn, reduced);
    kv_src = new_tensor(ctx, pre + ".attn.norm", B * n, C, gemm);
    add_layernorm(ctx, pre + ".attn.norm", pre + ".attn.norm", reduced, kv_src, kEmbedEps);
  }
  const TensorRef k = new_tensor(ctx, pre + ".attn.k", B * n, C);
  const TensorRef v = new_tensor(ctx, pre + ".attn.v", B * n, C);
  add_linear_rows(ctx, pre + ".attn.k", pre + ".attn.kv", 2 * C, {{0, C}}, kv_src, k);
  add_linear_rows(ctx, pre + ".attn.v", pre + ".attn.kv", 2 * C, {{C, C}}, kv_src, v);
  TensorRef v_full = v;
  if (sr > 1) {
    v_full = new_tensor(ctx, pre + ".attn.v_interp", M, C);
    add_node(ctx, pre + ".attn.v_interp", {v}, {v_full}, [B, n, N, C, &plan](const NodeArgs &io) {
      ops::interpolate_tokens(io.in(0).f32(), io.out(0).f32(), B, n, N, C, plan.threads);
    });
  }

  const TensorRef attn = new_tensor(ctx, pre + ".attn.core", M, C);
  PolarityCoreArgs a;
  a.prefix = pre + ".attn";
  a.sequences = B; a.n_q = N; a.n_k = n; a.grid_h = stage.res_h; a.grid_w = stage.res_w;
  a.pe_h = stored.kv_h; a.pe_w = stored.kv_w; a.kv_h = geo.kv_h; a.kv_w = geo.kv_w;
  a.heads = s.heads; a.head_dim = C / s.heads;
  a.q = qg.columns(0, C); a.g = qg.columns(C, C);
  a.k = k; a.v = v; a.v_full = v_full; a.out = attn;
  const TensorRef gated = add_polarity_core(ctx, a);
  add_linear(ctx, pre + ".attn", pre + ".attn.proj", gated, x, LinearEpilogue::into_residual());

  add_mlp_residual(ctx, pre, x, hidden, kBlockEps);
}

} // namespace

void build_pvt(BuildContext &ctx) {
  Plan &plan = ctx.plan;
  const ModelConfig &cfg = ctx.cfg;
  const int64_t B = plan.batch;
  const ModelGeometry geometry = model_geometry(cfg, plan.key.height, plan.key.width);
  const ModelGeometry stored = model_geometry(cfg);  // the shapes of the checkpoint's tables
  const size_t last = last_needed_stage(plan.key, cfg.stages.size());
  TensorRef x;               // tokens of the current stage
  for (size_t si = 0; si <= last; ++si) {
    const StageConfig &s = cfg.stages[si];
    const StageGeometry &stage = geometry.stages[si];
    const std::string i = std::to_string(si + 1);
    const int64_t C = s.dim, M = B * stage.tokens;

    const TensorRef embedded = new_tensor(ctx, "patch_embed" + i + ".proj", M, C);
    ops::PatchGrid grid{B, stage.in_channels, stage.in_h, stage.in_w, stage.patch, si == 0};
    add_patch_conv(ctx, "patch_embed" + i + ".proj", "patch_embed" + i + ".proj", grid, si == 0 ? plan.input : x,
                   embedded);
    x = new_tensor(ctx, "stage" + i + ".x", M, C);  // the residual stream, updated in place
    add_layernorm(ctx, "patch_embed" + i, "patch_embed" + i + ".norm", embedded, x, kEmbedEps);
    const StageGeometry &st0 = stored.stages[si];
    const float *pos = grid_table(ctx, "pos_embed" + i, st0.res_h, st0.res_w, stage.res_h, stage.res_w, C);
    const int64_t N = stage.tokens;
    add_node(ctx, "pos_embed" + i, {x}, {x}, [pos, B, N, C, &plan](const NodeArgs &io) {
      ops::add_broadcast_rows(io.out(0).f32(), pos, B, N, C, plan.threads);
    });
    for (size_t j = 0; j < stage.blocks.size(); ++j)
      add_pvt_block(ctx, "block" + i + "." + std::to_string(j), s, stage, stage.blocks[j], st0.blocks[j], x);
    add_stage_result(ctx, si, x);
  }
  // The reference never applies the final norm; it is in the checkpoint only.
  ctx.weights.ignore("norm.weight");
  ctx.weights.ignore("norm.bias");

  add_pool_and_head(ctx, x);
}

} // namespace pola::models
