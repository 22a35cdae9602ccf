#include "engine/models/build_context.h"

#include <algorithm>
#include <stdexcept>

#include "engine/ops/conv2d.h"
#include "engine/ops/fused_mlp.h"
#include "engine/ops/token_ops.h"
#include "kernels/kernels.h"
#include "model/polarity_params.h"

namespace pola::models {

std::vector<int64_t> token_shape(const TensorView &t, int64_t batch) {
  if (t.rows == batch) return {batch, t.cols};
  return {batch, t.rows / batch, t.cols};
}

const float *BuildContext::keep(int64_t floats, const std::function<std::vector<float>()> &compute) {
  plan.side_bytes += static_cast<size_t>(floats) * sizeof(float);
  if (sizing_only) return nullptr;
  std::vector<float> table = compute();
  // The count is what a sizing pass charged for this table: they must agree.
  if (static_cast<int64_t>(table.size()) != floats)
    throw std::logic_error("plan table of " + std::to_string(table.size()) + " floats, " + std::to_string(floats) +
                           " counted");
  return make<std::vector<float>>(std::move(table))->data();
}

TensorView new_tensor(BuildContext &ctx, const std::string &name, int64_t rows, int64_t cols) {
  return ctx.plan.graph.tensor(name, rows, cols);
}

void add_node(BuildContext &ctx, const std::string &name, Edges edges, std::function<void()> run) {
  ctx.plan.graph.add(name, std::move(edges), std::move(run));
}

void add_node(BuildContext &ctx, const std::string &name, Edges edges, std::function<void()> run,
              const TensorView &output) {
  ctx.plan.graph.add(name, std::move(edges), std::move(run), output, token_shape(output, ctx.plan.batch));
}

GemmRows new_gemm_rows(BuildContext &ctx, const std::string &name, int64_t rows, int64_t cols, Precision precision) {
  if (precision == Precision::fp32) return fp32_rows(new_tensor(ctx, name, rows, cols));
  // Dense (ld == cols), so a row gather can move whole rows of any width.
  TensorView half = new_tensor(ctx, name, 1, (rows * cols + 1) / 2);
  return GemmRows{half, rows, cols, cols, Precision::bf16};
}

GemmRows fp32_rows(const TensorView &t) { return GemmRows{t, t.rows, t.cols, t.ld, Precision::fp32}; }

namespace {

// The source of a GEMM in `precision`: `src` itself when it is held so, or a
// bf16 copy of fp32 rows (node `name.to_bf16`).
GemmRows gemm_source(BuildContext &ctx, const std::string &name, const GemmRows &src, Precision precision) {
  if (src.precision == precision) return src;
  if (src.bf16()) throw std::logic_error("graph: " + name + " would read bf16 rows in fp32");
  const GemmRows half = new_gemm_rows(ctx, name + ".to_bf16", src.rows, src.cols, precision);
  Plan &plan = ctx.plan;
  add_node(ctx, name + ".to_bf16", {{src.storage}, {half.storage}}, [src, half, &plan] {
    kernels::active().to_bf16(src.ptr(), src.ld, half.bf16_ptr(), half.ld, src.rows, src.cols, plan.threads);
  });
  plan.graph.set_last_precision(Precision::bf16);
  return half;
}

// The one place a matmul node is made: dst = src W^T + b, then optionally GELU or + dst,
// in `precision` (the plan's choice for this op kind).
void add_matmul_node(BuildContext &ctx, const std::string &name, ops::LinearParams p, const GemmRows &src,
                     const GemmRows &dst, bool gelu, bool accumulate, Precision precision) {
  if (dst.bf16() && (precision != Precision::bf16 || accumulate))
    throw std::logic_error("graph: " + name + " cannot write bf16 rows");
  p.precision = precision;
  const GemmRows in = gemm_source(ctx, name, src, precision);
  // GELU runs as the engine's kernel over the GEMM's fp32 result, never as
  // oneDNN's gelu_erf post-op: on AMD EPYC (Zen 4) with 2 threads the GEMM
  // plus that pass took 2-6% less time than the GEMM with the post-op on the
  // unfused MLP shapes (196x320x1280, 49x512x2048, 196x384x1536, 49x768x3072;
  // bench/peers/README.md). GELU'd bf16 rows come from gelu_bf16's own node
  // (add_mlp_residual), as in ops::FusedMlp.
  if (gelu && dst.bf16()) throw std::logic_error("graph: " + name + " cannot apply GELU into bf16 rows");
  auto *op = ctx.make<ops::Linear>(p, ops::LinearShape{src.rows, in.ld, dst.ld, accumulate, dst.bf16()}, ctx.packed);
  Plan &plan = ctx.plan;
  // Accumulating into dst reads it: the in-place update of a residual stream.
  Edges edges{{in.storage}, {dst.storage}};
  if (accumulate) edges.reads.push_back(dst.storage);
  auto run = [op, in, dst, gelu, &plan] {
    op->run(plan.stream, in.ptr(), dst.ptr());
    if (!gelu) return;
    const auto &kernels = kernels::active();
    if (dst.ld == dst.cols) return kernels.gelu(dst.ptr(), dst.rows * dst.cols, plan.threads);
    for (int64_t r = 0; r < dst.rows; ++r) kernels.gelu(dst.ptr() + r * dst.ld, dst.cols, plan.threads);
  };
  if (dst.bf16()) add_node(ctx, name, std::move(edges), run);
  else add_node(ctx, name, std::move(edges), run, dst.storage);
  plan.graph.set_last_precision(p.precision);
}

// TensorView [first, first + count) of each range of a (rows, width) tensor, concatenated.
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
  const StoredWeight w = ctx.weights.get_stored(prefix + ".weight", {out, in});
  p.weight = w.data;
  p.weight_stored_bf16 = w.dtype == weights::StoredDtype::bf16;
  p.bias = has_bias ? ctx.weights.get(prefix + ".bias", {out}) : nullptr;
  return p;
}

} // namespace

void add_linear(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorView &src,
                const TensorView &dst, LinearEpilogue epilogue) {
  add_linear(ctx, name, prefix, fp32_rows(src), fp32_rows(dst), epilogue);
}

void add_linear(BuildContext &ctx, const std::string &name, const std::string &prefix, const GemmRows &src,
                const GemmRows &dst, LinearEpilogue epilogue) {
  add_matmul_node(ctx, name, linear_params(ctx, prefix, src.cols, dst.cols, epilogue.bias), src, dst, epilogue.gelu,
                  epilogue.accumulate, ctx.precisions.gemm);
}

void add_linear_rows(BuildContext &ctx, const std::string &name, const std::string &prefix,
                     int64_t full_out, const std::vector<std::pair<int64_t, int64_t>> &row_ranges,
                     const GemmRows &src, const TensorView &dst) {
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
  add_matmul_node(ctx, name, p, src, fp32_rows(dst), false, false, ctx.precisions.gemm);
}

void add_patch_conv(BuildContext &ctx, const std::string &name, const std::string &prefix,
                    const ops::PatchGrid &grid, const float *const *src_ptr, const GemmRows *src_rows,
                    const TensorView &dst) {
  const int64_t p = grid.patch, k = grid.row_width(), rows = grid.batch * grid.out_h() * grid.out_w();
  ops::LinearParams lp;
  lp.in = k;
  lp.out = dst.cols;
  const StoredWeight w = ctx.weights.get_stored(prefix + ".weight", {dst.cols, grid.channels, p, p}); // == (out, k) row-major
  lp.weight = w.data;
  lp.weight_stored_bf16 = w.dtype == weights::StoredDtype::bf16;
  lp.bias = ctx.weights.get(prefix + ".bias", {dst.cols});
  const GemmRows patches = new_gemm_rows(ctx, name + ".patches", rows, k, ctx.precisions.embed);
  Plan &plan = ctx.plan;
  const GemmRows src_copy = src_rows ? *src_rows : GemmRows{};
  // The image batch is the graph's input, not one of its tensors.
  Edges edges{{}, {patches.storage}};
  if (src_rows) edges.reads.push_back(src_rows->storage);
  add_node(ctx, name + ".patchify", std::move(edges), [=, &plan] {
    const void *from = src_ptr ? static_cast<const void *>(*src_ptr) : src_copy.storage.ptr();
    ops::patchify(grid, from, !src_ptr && src_copy.bf16(), patches.storage.ptr(), patches.bf16(), plan.threads);
  });
  add_matmul_node(ctx, name, lp, patches, fp32_rows(dst), false, false, ctx.precisions.embed);
}

void add_layernorm(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorView &src,
                   const TensorView &dst, float eps, bool report_output) {
  const float *gamma = ctx.weights.get(prefix + ".weight", {src.cols});
  const float *beta = ctx.weights.get(prefix + ".bias", {src.cols});
  Plan &plan = ctx.plan;
  auto run = [=, &plan] {
    kernels::active().layernorm(src.ptr(), src.ld, dst.ptr(), dst.ld, src.rows, src.cols, gamma, beta, eps,
                                plan.threads);
  };
  if (report_output) add_node(ctx, name, {{src}, {dst}}, run, dst);
  else add_node(ctx, name, {{src}, {dst}}, run);
}

void add_layernorm(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorView &src,
                   const GemmRows &dst, float eps, bool report_output) {
  if (!dst.bf16()) return add_layernorm(ctx, name, prefix, src, dst.storage, eps, report_output);
  const float *gamma = ctx.weights.get(prefix + ".weight", {src.cols});
  const float *beta = ctx.weights.get(prefix + ".bias", {src.cols});
  Plan &plan = ctx.plan;
  add_node(ctx, name, {{src}, {dst.storage}}, [=, &plan] {
    kernels::active().layernorm_bf16(src.ptr(), src.ld, dst.bf16_ptr(), dst.ld, src.rows, src.cols, gamma, beta, eps,
                                     plan.threads);
  });
  plan.graph.set_last_precision(Precision::bf16);
}

void add_mlp_residual(BuildContext &ctx, const std::string &block, const TensorView &x, int64_t hidden, float eps) {
  const Precision gemm = ctx.precisions.gemm;
  const GemmRows xn = new_gemm_rows(ctx, block + ".norm2", x.rows, x.cols, gemm);
  add_layernorm(ctx, block + ".norm2", block + ".norm2", x, xn, eps, false);
  if (x.rows >= ops::FusedMlp::kMinRows) {
    Plan &plan = ctx.plan;
    ops::LinearParams fc1 = linear_params(ctx, block + ".mlp.fc1", x.cols, hidden, true);
    ops::LinearParams fc2 = linear_params(ctx, block + ".mlp.fc2", hidden, x.cols, true);
    fc1.precision = fc2.precision = gemm;
    auto *op = ctx.make<ops::FusedMlp>(fc1, fc2, ops::FusedMlpShape{x.rows, xn.ld, x.ld, plan.threads}, ctx.packed);
    ctx.note_side_bytes(ops::FusedMlp::chunk_bytes(hidden, gemm, plan.threads));
    add_node(ctx, block, {{xn.storage, x}, {x}}, [op, xn, x] { op->run(xn.storage.ptr(), x.ptr()); }, x);
    plan.graph.set_last_precision(fc1.precision);
    return;
  }
  // fc1's GELU'd rows in fc2's precision, GELU by the engine's kernel in both
  // (oneDNN 2.6's erf post-op is slower; see ops::FusedMlp): in bf16 fc1 writes
  // fp32 rows that gelu_bf16 rounds to bf16 in one pass, in fp32
  // add_matmul_node applies it in place after the GEMM.
  const GemmRows hid = new_gemm_rows(ctx, block + ".mlp.hidden", x.rows, hidden, gemm);
  if (hid.bf16()) {
    Plan &plan = ctx.plan;
    const TensorView pre_gelu = new_tensor(ctx, block + ".mlp.fc1", x.rows, hidden);
    add_linear(ctx, block + ".mlp.fc1", block + ".mlp.fc1", xn, fp32_rows(pre_gelu));
    add_node(ctx, block + ".mlp.gelu", {{pre_gelu}, {hid.storage}}, [pre_gelu, hid, &plan] {
      kernels::active().gelu_bf16(pre_gelu.ptr(), pre_gelu.ld, hid.bf16_ptr(), hid.ld, pre_gelu.rows, pre_gelu.cols,
                                  plan.threads);
    });
    plan.graph.set_last_precision(Precision::bf16);
  } else {
    add_linear(ctx, block + ".mlp.fc1", block + ".mlp.fc1", xn, hid, LinearEpilogue::then_gelu());
  }
  add_linear(ctx, block, block + ".mlp.fc2", hid, fp32_rows(x), LinearEpilogue::into_residual());
}

GemmRows add_polarity_core(BuildContext &ctx, const PolarityCoreArgs &a) {
  const int64_t h = a.heads, d = a.head_dim, c = h * d, ks = ctx.cfg.kernel_size;
  const std::string &pre = a.prefix;
  const float *power_raw = ctx.weights.get(pre + ".power", {1, h, 1, d});
  const float *scale_raw = ctx.weights.get(pre + ".scale", {1, 1, c});
  const float *pos_enc = grid_table(ctx, pre + ".positional_encoding", a.pe_h, a.pe_w, a.kv_h, a.kv_w, c);
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
  // The core in the plan's attention precision: bf16 products where the CPU
  // has AMX-BF16 or AVX512-BF16, else the fp32 core (the node records which ran).
  const kernels::PolaAttnFn bf16_core =
      ctx.precisions.attention == Precision::bf16 ? kernels::pola_attention_bf16() : nullptr;
  const kernels::PolaAttnFn core = bf16_core ? bf16_core : kernels::active().pola_attention;
  add_node(ctx, pre + ".core", {{a.q, a.k, a.v}, {a.out}}, [args, power, inv_scale, pos_enc, core, &plan] {
    auto run_sequence = [&](int64_t s, int threads) {
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
      k.threads = threads;
      core(k);
    };
    // Many short sequences (Swin windows, batches): one per thread at a
    // time, so the kernel's own parallel regions (three barriers each) do not
    // run for every 49-token window. The kernel's result does not depend on
    // its thread count, so this changes no value.
    if (plan.threads > 1 && args.sequences >= plan.threads) {
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1)
      for (int64_t s = 0; s < args.sequences; ++s) run_sequence(s, 1);
    } else {
      for (int64_t s = 0; s < args.sequences; ++s) run_sequence(s, plan.threads);
    }
  }, a.out);
  if (bf16_core) plan.graph.set_last_precision(Precision::bf16);

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
  add_node(ctx, pre + ".dwc", {{a.v_full, a.out}, {a.out}},
           [conv, args, &plan] { conv->run(plan.stream, args.v_full.ptr(), args.out.ptr()); }, a.out);
  if (ctx.precisions.gemm == Precision::fp32) {
    add_node(ctx, pre + ".gate", {{a.out, a.g}, {a.out}}, [args, &plan] {
      kernels::active().mul_rows(args.out.ptr(), args.out.ld, args.g.ptr(), args.g.ld, args.out.rows, args.out.cols,
                                 plan.threads);
    }, a.out);
    return fp32_rows(a.out);
  }
  // The gated rows feed only the output projection: written in its
  // precision, each chunk rounded while it is still in cache (the fp32
  // product is left in `out`, gated in place as in fp32).
  const GemmRows gated = new_gemm_rows(ctx, pre + ".gate", a.out.rows, a.out.cols, ctx.precisions.gemm);
  add_node(ctx, pre + ".gate", {{a.out, a.g}, {a.out, gated.storage}}, [args, gated, &plan] {
    const auto &kt = kernels::active();
    // Chunks of ~64 KB of fp32 rows: in L2 when rounded, and few kernel calls.
    const int64_t rows = args.out.rows, chunk = std::max<int64_t>(16, 16384 / std::max<int64_t>(1, args.out.cols));
    const int64_t chunks = (rows + chunk - 1) / chunk;
#pragma omp parallel for num_threads(plan.threads) schedule(static)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const int64_t r0 = ch * chunk, n = std::min(chunk, rows - r0);
      float *out = args.out.ptr() + r0 * args.out.ld;
      kt.mul_rows(out, args.out.ld, args.g.ptr() + r0 * args.g.ld, args.g.ld, n, args.out.cols, 1);
      kt.to_bf16(out, args.out.ld, gated.bf16_ptr() + r0 * gated.ld, gated.ld, n, args.out.cols, 1);
    }
  });
  plan.graph.set_last_precision(Precision::bf16);
  return gated;
}

void add_pool_and_head(BuildContext &ctx, const TensorView &tokens) {
  const PlanKey &key = ctx.plan.key;
  if (!key.pooled && !key.logits) return;
  const int64_t B = ctx.plan.batch, N = tokens.rows / B, C = tokens.cols;
  TensorView pooled = new_tensor(ctx, "pooled", B, C);
  add_node(ctx, "pool", {{tokens}, {pooled}},
           [tokens, pooled, B, N, C] { ops::mean_over_tokens(tokens.ptr(), pooled.ptr(), B, N, C); }, pooled);
  if (key.pooled) {
    ctx.plan.graph.keep_to_end(pooled);
    ctx.plan.pooled = pooled;
  }
  if (!key.logits) return;
  TensorView logits = new_tensor(ctx, "logits", B, ctx.cfg.num_classes);
  add_linear(ctx, "head", "head", pooled, logits);
  ctx.plan.graph.keep_to_end(logits);
  ctx.plan.logits = logits;
}

const float *grid_table(BuildContext &ctx, const std::string &name, int64_t ckpt_h, int64_t ckpt_w, int64_t h,
                        int64_t w, int64_t channels) {
  const float *stored = ctx.weights.get(name, {1, ckpt_h * ckpt_w, channels});
  if (h == ckpt_h && w == ckpt_w) return stored;
  return ctx.keep(h * w * channels, [&] { return ops::resize_token_grid(stored, ckpt_h, ckpt_w, h, w, channels); });
}

size_t last_needed_stage(const PlanKey &key, size_t stages) {
  if (key.pooled || key.logits) return stages - 1;
  size_t last = 0;
  for (size_t i = 0; i < stages; ++i)
    if (key.stages & (1u << i)) last = i;
  return last;
}

void keep_stage_output(BuildContext &ctx, size_t stage, const TensorView &tokens) {
  Plan &plan = ctx.plan;
  if (plan.stage_tokens.size() <= stage) plan.stage_tokens.resize(stage + 1);
  if (!(plan.key.stages & (1u << stage))) return;
  plan.graph.keep_to_end(tokens);
  plan.stage_tokens[stage] = tokens;
}

} // namespace pola::models
