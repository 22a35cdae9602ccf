#include "engine/models/build_context.h"


#include "engine/ops/conv2d.h"
#include "engine/ops/fused_mlp.h"
#include "kernels/kernels.h"
#include "model/polarity_params.h"

namespace pola::models {

Rows reserve_rows(BuildContext &ctx, const std::string &name, int64_t rows, int64_t cols) {
  Slot *s = ctx.plan.arena.reserve(name, static_cast<size_t>(rows * cols));
  return Rows{s, 0, rows, cols, cols};
}

TensorView2D token_view(const Rows &r, int64_t batch) {
  TensorView2D v;
  v.slot = r.slot;
  v.offset = r.offset;
  v.rows = r.rows;
  v.cols = r.cols;
  v.ld = r.ld;
  // One row per image (pooled features, logits) is reported as (batch, cols).
  if (r.rows == batch) v.shape = {batch, r.cols};
  else v.shape = {batch, r.rows / batch, r.cols};
  return v;
}

namespace {

// The one place a matmul node is made: dst = src W^T + b with optional post-ops.
void add_matmul_node(BuildContext &ctx, const std::string &name, const ops::LinearParams &p, const Rows &src,
                     const Rows &dst, bool gelu, bool accumulate) {
  auto *op = ctx.make<ops::Linear>(p, ops::LinearShape{src.rows, src.ld, dst.ld, gelu, accumulate}, ctx.packed);
  Plan &plan = ctx.plan;
  plan.graph.add(name, [op, src, dst, &plan] { op->run(plan.stream, src.ptr(), dst.ptr()); },
                 token_view(dst, plan.batch));
}

// Rows [first, first + count) of each range of a (rows, width) tensor, concatenated.
std::vector<float> gather_rows(const float *t, int64_t width, const std::vector<std::pair<int64_t, int64_t>> &ranges) {
  std::vector<float> out;
  for (auto &r : ranges) out.insert(out.end(), t + r.first * width, t + (r.first + r.second) * width);
  return out;
}

} // namespace

namespace {

// `prefix.weight` (out, in) and, if has_bias, `prefix.bias` (out).
ops::LinearParams linear_params(BuildContext &ctx, const std::string &prefix, int64_t in, int64_t out,
                                bool has_bias) {
  ops::LinearParams p;
  p.in = in;
  p.out = out;
  p.weight = ctx.weights.get(prefix + ".weight", {out, in});
  p.bias = has_bias ? ctx.weights.get(prefix + ".bias", {out}) : nullptr;
  return p;
}

} // namespace

void add_linear(BuildContext &ctx, const std::string &name, const std::string &prefix, const Rows &src,
                const Rows &dst, bool has_bias, bool gelu, bool accumulate) {
  add_matmul_node(ctx, name, linear_params(ctx, prefix, src.cols, dst.cols, has_bias), src, dst, gelu, accumulate);
}

void add_linear_rows(BuildContext &ctx, const std::string &name, const std::string &prefix,
                     int64_t full_out, const std::vector<std::pair<int64_t, int64_t>> &row_ranges,
                     const Rows &src, const Rows &dst) {
  const int64_t in = src.cols;
  const float *w = ctx.weights.get(prefix + ".weight", {full_out, in});
  const float *b = ctx.weights.get(prefix + ".bias", {full_out});
  std::string key = prefix;
  for (auto &r : row_ranges) key += ":" + std::to_string(r.first) + "+" + std::to_string(r.second);
  ops::LinearParams p;
  p.in = in;
  p.out = dst.cols;
  p.weight = ctx.weights.derived(key + ".weight", [&] { return gather_rows(w, in, row_ranges); });
  p.bias = ctx.weights.derived(key + ".bias", [&] { return gather_rows(b, 1, row_ranges); });
  add_matmul_node(ctx, name, p, src, dst, false, false);
}

void add_patch_conv(BuildContext &ctx, const std::string &name, const std::string &prefix,
                    const ops::PatchGrid &grid, const float *const *src_ptr, const Rows *src_rows,
                    const Rows &dst) {
  const int64_t p = grid.patch, k = grid.row_width(), rows = grid.batch * grid.out_h() * grid.out_w();
  ops::LinearParams lp;
  lp.in = k;
  lp.out = dst.cols;
  lp.weight = ctx.weights.get(prefix + ".weight", {dst.cols, grid.channels, p, p}); // == (out, k) row-major
  lp.bias = ctx.weights.get(prefix + ".bias", {dst.cols});
  Rows patches = reserve_rows(ctx, "patches", rows, k);
  Plan &plan = ctx.plan;
  Rows src_copy = src_rows ? *src_rows : Rows{};
  plan.graph.add(name + ".patchify", [=, &plan] {
    ops::patchify(grid, src_ptr ? *src_ptr : src_copy.ptr(), patches.ptr(), plan.threads);
  });
  add_matmul_node(ctx, name, lp, patches, dst, false, false);
}

void add_layernorm(BuildContext &ctx, const std::string &name, const std::string &prefix, const Rows &src,
                   const Rows &dst, float eps, bool report_output) {
  const float *gamma = ctx.weights.get(prefix + ".weight", {src.cols});
  const float *beta = ctx.weights.get(prefix + ".bias", {src.cols});
  Plan &plan = ctx.plan;
  auto run = [=, &plan] {
    kernels::active().layernorm(src.ptr(), src.ld, dst.ptr(), dst.ld, src.rows, src.cols, gamma, beta, eps,
                                plan.threads);
  };
  if (report_output) ctx.plan.graph.add(name, run, token_view(dst, plan.batch));
  else ctx.plan.graph.add(name, run);
}

void add_mlp_residual(BuildContext &ctx, const std::string &block, const Rows &x, const Rows &xn,
                      int64_t hidden, float eps) {
  add_layernorm(ctx, block + ".norm2", block + ".norm2", x, xn, eps, false);
  if (x.rows >= ops::FusedMlp::kMinRows) {
    Plan &plan = ctx.plan;
    auto *op = ctx.make<ops::FusedMlp>(linear_params(ctx, block + ".mlp.fc1", x.cols, hidden, true),
                                       linear_params(ctx, block + ".mlp.fc2", hidden, x.cols, true),
                                       ops::FusedMlpShape{x.rows, xn.ld, x.ld, plan.threads}, ctx.packed);
    plan.graph.add(block, [op, xn, x] { op->run(xn.ptr(), x.ptr()); }, token_view(x, plan.batch));
    return;
  }
  Rows hid = reserve_rows(ctx, "hidden", x.rows, hidden);
  add_linear(ctx, block + ".mlp.fc1", block + ".mlp.fc1", xn, hid, true, true, false);
  add_linear(ctx, block, block + ".mlp.fc2", hid, x, true, false, true);
}

void add_polarity_core(BuildContext &ctx, const PolarityCoreArgs &a) {
  const int64_t h = a.heads, d = a.head_dim, c = h * d, ks = ctx.cfg.kernel_size;
  const std::string &pre = a.prefix;
  const float *power_raw = ctx.weights.get(pre + ".power", {1, h, 1, d});
  const float *scale_raw = ctx.weights.get(pre + ".scale", {1, 1, c});
  const float *pos_enc = ctx.weights.get(pre + ".positional_encoding", {1, a.n_k, c});
  const float *dwc_w = ctx.weights.get(pre + ".dwc.weight", {d, 1, ks, ks});
  const float *dwc_b = ctx.weights.get(pre + ".dwc.bias", {d});
  const double alpha = ctx.cfg.alpha;

  // Transformed once (model/polarity_params.h): the exponents p, 1 / softplus(scale), and
  // the depthwise weights shared by all heads replicated per head so that one
  // grouped convolution covers every channel.
  const float *power = ctx.weights.derived(pre + ".power:effective", [&] {
    std::vector<float> p(c);
    for (int64_t i = 0; i < c; ++i) p[i] = static_cast<float>(polarity_exponent(alpha, power_raw[i]));
    return p;
  });
  const float *inv_scale = ctx.weights.derived(pre + ".scale:inverse_softplus", [&] {
    std::vector<float> s(c);
    for (int64_t i = 0; i < c; ++i) s[i] = static_cast<float>(inverse_softplus(scale_raw[i]));
    return s;
  });
  const float *dw_weight = ctx.weights.derived(pre + ".dwc.weight:per_head", [&] {
    std::vector<float> w(c * ks * ks);
    for (int64_t head = 0; head < h; ++head)
      for (int64_t i = 0; i < d * ks * ks; ++i) w[head * d * ks * ks + i] = dwc_w[i];
    return w;
  });
  const float *dw_bias = ctx.weights.derived(pre + ".dwc.bias:per_head", [&] {
    std::vector<float> b(c);
    for (int64_t i = 0; i < c; ++i) b[i] = dwc_b[i % d];
    return b;
  });

  Plan &plan = ctx.plan;
  PolarityCoreArgs args = a;
  plan.graph.add(pre + ".core", [args, power, inv_scale, pos_enc, &plan] {
    const auto &kt = kernels::active();
    for (int64_t s = 0; s < args.sequences; ++s) {
      kernels::PolaAttnArgs k;
      k.n_q = args.n_q;
      k.n_k = args.n_k;
      k.heads = args.heads;
      k.head_dim = args.head_dim;
      k.q = args.q.ptr() + s * args.n_q * args.q.ld;
      k.ld_q = args.q.ld;
      k.k = args.k.ptr() + s * args.n_k * args.k.ld;
      k.ld_k = args.k.ld;
      k.v = args.v.ptr() + s * args.n_k * args.v.ld;
      k.ld_v = args.v.ld;
      k.pos_enc = pos_enc;
      k.inv_scale = inv_scale;
      k.power = power;
      k.out = args.out.ptr() + s * args.n_q * args.out.ld;
      k.ld_out = args.out.ld;
      k.threads = plan.threads;
      kt.pola_attention(k);
    }
  }, token_view(a.out, plan.batch));

  ops::Conv2dShape cs;
  cs.batch = a.sequences;
  cs.in_ch = c;
  cs.in_h = a.grid_h;
  cs.in_w = a.grid_w;
  cs.out_ch = c;
  cs.kernel = ks;
  cs.stride = 1;
  cs.pad = ks / 2;
  cs.groups = c;
  cs.accumulate = true;
  auto *conv = ctx.make<ops::Conv2d>(cs, dw_weight, dw_bias, ctx.packed);
  plan.graph.add(pre + ".dwc", [conv, args, &plan] { conv->run(plan.stream, args.v_full.ptr(), args.out.ptr()); },
                 token_view(a.out, plan.batch));
  plan.graph.add(pre + ".gate", [args, &plan] {
    kernels::active().mul_rows(args.out.ptr(), args.out.ld, args.g.ptr(), args.g.ld, args.out.rows, args.out.cols,
                               plan.threads);
  }, token_view(a.out, plan.batch));
}

} // namespace pola::models
