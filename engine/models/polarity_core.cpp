#include "engine/models/polarity_core.h"

#include <algorithm>

#include "engine/ops/conv2d.h"
#include "kernels/registry.h"
#include "model/polarity_params.h"

namespace pola::models {
namespace {

// The core's parameters as the kernel takes them, transformed once
// (model/polarity_params.h): the exponents p, 1 / softplus(scale), and the
// depthwise weights shared by all heads replicated per head so that one
// grouped convolution covers every channel.
struct CoreWeights {
  const float *power, *inv_scale, *dw_weight, *dw_bias;
};

CoreWeights core_weights(BuildContext &ctx, const std::string &pre, int64_t h, int64_t d) {
  const int64_t c = h * d, ks = ctx.cfg.kernel_size;
  const float *power_raw = ctx.weights.get(pre + ".power", {1, h, 1, d});
  const float *scale_raw = ctx.weights.get(pre + ".scale", {1, 1, c});
  const float *dwc_w = ctx.weights.get(pre + ".dwc.weight", {d, 1, ks, ks});
  const float *dwc_b = ctx.weights.get(pre + ".dwc.bias", {d});
  const double alpha = ctx.cfg.alpha;
  CoreWeights w;
  w.power = ctx.weights.derived(pre + ".power:effective", [&] {
    std::vector<float> p(c);
    for (int64_t i = 0; i < c; ++i) p[i] = static_cast<float>(polarity_exponent(alpha, power_raw[i]));
    return p;
  });
  w.inv_scale = ctx.weights.derived(pre + ".scale:inverse_softplus", [&] {
    std::vector<float> s(c);
    for (int64_t i = 0; i < c; ++i) s[i] = static_cast<float>(inverse_softplus(scale_raw[i]));
    return s;
  });
  w.dw_weight = ctx.weights.derived(pre + ".dwc.weight:per_head", [&] {
    std::vector<float> wt(c * ks * ks);
    for (int64_t head = 0; head < h; ++head)
      for (int64_t i = 0; i < d * ks * ks; ++i) wt[head * d * ks * ks + i] = dwc_w[i];
    return wt;
  });
  w.dw_bias = ctx.weights.derived(pre + ".dwc.bias:per_head", [&] {
    std::vector<float> b(c);
    for (int64_t i = 0; i < c; ++i) b[i] = dwc_b[i % d];
    return b;
  });
  return w;
}

} // namespace

TensorRef add_polarity_core(BuildContext &ctx, const PolarityCoreArgs &a) {
  const int64_t c = int64_t(a.heads) * a.head_dim, ks = ctx.cfg.kernel_size;
  const std::string &pre = a.prefix;
  const CoreWeights w = core_weights(ctx, pre, a.heads, a.head_dim);
  const float *pos_enc = grid_table(ctx, pre + ".positional_encoding", a.pe_h, a.pe_w, a.kv_h, a.kv_w, c);

  Plan &plan = ctx.plan;
  // The core in the plan's attention precision where the registry has a
  // kernel for it on this CPU and head shape, else the f32 core: the node
  // records the precision that runs.
  kernels::PolarityAttnArgs shape;
  shape.heads = a.heads;
  shape.head_dim = a.head_dim;
  shape.feature = kernels::FeatureMap{kernels::FeatureKind::abs_pow, w.power};
  const auto core = kernels::resolve<kernels::Op::polarity_attention>(dtype_of(ctx.precisions.attention), shape);
  if (!core) throw std::logic_error("no polarity-attention kernel for " + pre);
  const int64_t sequences = a.sequences, n_q = a.n_q, n_k = a.n_k;
  add_node(ctx, pre + ".core", {a.q, a.k, a.v}, {a.out}, [=, &plan](const NodeArgs &io) {
    const TensorView &q = io.in(0), &k = io.in(1), &v = io.in(2), &out = io.out(0);
    auto run_sequence = [&](int64_t s, int threads) {
      kernels::PolarityAttnArgs args = shape;
      args.n_q = n_q;
      args.n_k = n_k;
      args.q = q.f32() + s * n_q * q.ld();
      args.ld_q = q.ld();
      args.k = k.f32() + s * n_k * k.ld();
      args.ld_k = k.ld();
      args.v = v.f32() + s * n_k * v.ld();
      args.ld_v = v.ld();
      args.pos_enc = pos_enc;
      args.inv_scale = w.inv_scale;
      args.out = out.f32() + s * n_q * out.ld();
      args.ld_out = out.ld();
      args.threads = threads;
      core.fn(args);
    };
    // Many short sequences (Swin windows, batches): one per thread at a
    // time, so the kernel's own parallel regions (three barriers each) do not
    // run for every 49-token window. The kernel's result does not depend on
    // its thread count, so this changes no value.
    if (plan.threads > 1 && sequences >= plan.threads) {
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1)
      for (int64_t s = 0; s < sequences; ++s) run_sequence(s, 1);
    } else {
      for (int64_t s = 0; s < sequences; ++s) run_sequence(s, plan.threads);
    }
  }, precision_of(core.dtype));

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
  auto *conv = ctx.make<ops::Conv2d>(cs, w.dw_weight, w.dw_bias, ctx.packed);
  // out(0) is in(1): the branch is added to the attention in place.
  add_node(ctx, pre + ".dwc", {a.v_full, a.out}, {a.out}, [conv, &plan](const NodeArgs &io) {
    conv->run(plan.stream, io.in(0).f32(), io.out(0).f32());
  });
  return add_gate(ctx, pre + ".gate", a.out, a.g);
}

TensorRef add_gate(BuildContext &ctx, const std::string &name, const TensorRef &out, const TensorRef &g) {
  Plan &plan = ctx.plan;
  const auto mul_rows = kernels::resolve<kernels::Op::mul_rows, DType::f32>().fn;
  // Gated in place where the projection reads f32 rows (fp32, and int8, whose GEMM quantizes them itself).
  if (dtype_of(ctx.precisions.gemm) == DType::f32) {
    add_node(ctx, name, {out, g}, {out}, [mul_rows, &plan](const NodeArgs &io) {
      const TensorView &g = io.in(1), &out = io.out(0);
      mul_rows(out.f32(), out.ld(), g.f32(), g.ld(), out.rows(), out.cols(), plan.threads);
    });
    return out;
  }
  // The gated rows feed only the output projection: written in its dtype,
  // each chunk rounded while it is still in cache (the f32 product is left in
  // `out`, gated in place as in fp32).
  const TensorRef gated = new_tensor(ctx, name, out.rows, out.cols, dtype_of(ctx.precisions.gemm));
  const auto round = kernels::resolve<kernels::Op::to_bf16, DType::bf16>().fn;
  add_node(ctx, name, {out, g}, {out, gated}, [mul_rows, round, &plan](const NodeArgs &io) {
    const TensorView &g = io.in(1), &out = io.out(0), &half = io.out(1);
    // Chunks of ~64 KB of f32 rows: in L2 when rounded, and few kernel calls.
    const int64_t rows = out.rows(), chunk = std::max<int64_t>(16, 16384 / std::max<int64_t>(1, out.cols()));
    const int64_t chunks = (rows + chunk - 1) / chunk;
#pragma omp parallel for num_threads(plan.threads) schedule(static)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const int64_t r0 = ch * chunk, n = std::min(chunk, rows - r0);
      float *o = out.f32() + r0 * out.ld();
      mul_rows(o, out.ld(), g.f32() + r0 * g.ld(), g.ld(), n, out.cols(), 1);
      round(o, out.ld(), half.bf16() + r0 * half.ld(), half.ld(), n, out.cols(), 1);
    }
  }, Precision::bf16);
  return gated;
}

} // namespace pola::models
