#include "engine/models/layers.h"

#include <stdexcept>

#include "engine/ops/fused_mlp.h"
#include "engine/ops/linear.h"
#include "engine/ops/linear_int8.h"
#include "engine/ops/token_ops.h"
#include "kernels/registry.h"
#include "weights/error.h"

namespace pola::models {
namespace {

using kernels::Op;
using kernels::resolve;

// What a linear node is, besides its weights: which layer (`prefix`: its
// weights are `prefix.weight`/`.bias`) and whether it may run in int8 (the
// classifier head and the patch embeddings do not: `pola quantize` leaves
// them float).
struct LayerRole {
  const std::string &prefix;
  bool quantizable = true;
};

// The precision a float GEMM runs at in this plan: int8 plans run the layers
// their file holds in float (and the patch embeddings) in fp32.
Precision float_precision(Precision p) { return p == Precision::int8 ? Precision::fp32 : p; }

// GELU in place over a GEMM's f32 result: one call over dense rows.
void apply_gelu(kernels::KernelFn<Op::gelu, DType::f32> gelu, const TensorView &y, int threads) {
  if (y.ld() == y.cols()) return gelu(y.f32(), y.rows() * y.cols(), threads);
  for (int64_t r = 0; r < y.rows(); ++r) gelu(y.f32() + r * y.ld(), y.cols(), threads);
}

// The node of a GEMM op: reads `in` (and dst when accumulating: the in-place
// update of a residual stream), writes dst with `gemm(src view, dst view)`,
// then applies GELU in place when asked.
template <class Gemm>
void add_gemm_node(BuildContext &ctx, const std::string &name, const TensorRef &in, const TensorRef &dst, bool gelu,
                   bool accumulate, Precision precision, Gemm gemm) {
  Plan &plan = ctx.plan;
  std::vector<TensorRef> inputs{in};
  if (accumulate) inputs.push_back(dst);
  const auto gelu_fn = gelu ? resolve<Op::gelu, DType::f32>().fn : nullptr;
  add_node(ctx, name, std::move(inputs), {dst}, [gemm, gelu_fn, &plan](const NodeArgs &io) {
    const TensorView &y = io.out(0);
    gemm(io.in(0), y);
    if (gelu_fn) apply_gelu(gelu_fn, y, plan.threads);
  }, precision);
}

// While calibrating (`pola quantize`), node `name.calibrate` folds the
// layer's source rows into the recorder before the GEMM reads them.
void add_calibration_node(BuildContext &ctx, const std::string &name, const std::string &prefix,
                          const TensorRef &src) {
  CalibrationRecorder *recorder = ctx.calibration;
  add_node(ctx, name + ".calibrate", {src}, {}, [recorder, prefix](const NodeArgs &io) {
    const TensorView &x = io.in(0);
    recorder->record(prefix, x.f32(), x.rows(), x.cols(), x.ld());
  });
}

// The one place a float matmul node is made: dst = src W^T + b, then
// optionally GELU or + dst, in `precision` (the plan's choice for this op kind).
void add_matmul_node(BuildContext &ctx, const std::string &name, const LayerRole &role, ops::LinearParams p,
                     const TensorRef &src, const TensorRef &dst, bool gelu, bool accumulate, Precision precision) {
  precision = float_precision(precision);
  const bool dst_bf16 = dst.dtype() == DType::bf16;
  if (dst_bf16 && (precision != Precision::bf16 || accumulate))
    throw std::logic_error("graph: " + name + " cannot write bf16 rows");
  // GELU runs as the engine's kernel over the GEMM's f32 result, not as
  // oneDNN's gelu_erf post-op, which was slower on the unfused MLP shapes
  // (bench/peers/README.md). GELU'd bf16 rows come from gelu_bf16's own node
  // (add_mlp_residual), as in ops::FusedMlp.
  if (gelu && dst_bf16) throw std::logic_error("graph: " + name + " cannot apply GELU into bf16 rows");
  if (ctx.calibration && role.quantizable) add_calibration_node(ctx, name, role.prefix, src);
  p.precision = precision;
  const TensorRef in = gemm_source(ctx, name, src, precision);
  auto *op = ctx.make<ops::Linear>(p, ops::LinearShape{src.rows, in.ld, dst.ld, accumulate, dst_bf16}, ctx.packed);
  Plan &plan = ctx.plan;
  add_gemm_node(ctx, name, in, dst, gelu, accumulate, precision, [op, &plan](const TensorView &x, const TensorView &y) {
    op->run(plan.stream, x.data(), y.data());
  });
}

// Whether layer `prefix` runs as an int8 GEMM in this plan: the plan runs
// int8 and the file holds the layer's weights in int8.
bool runs_int8(BuildContext &ctx, const LayerRole &role) {
  return role.quantizable && ctx.precisions.gemm == Precision::int8 && ctx.weights.stored_int8(role.prefix + ".weight");
}

// The int8 source rows of an int8 GEMM: `src` quantized with the layer's
// static scale (node `name.to_s8`).
TensorRef quantized_source(BuildContext &ctx, const std::string &name, const TensorRef &src, float scale) {
  if (src.dtype() != DType::f32) throw std::logic_error("graph: " + name + " would quantize non-f32 rows");
  const TensorRef q = new_tensor(ctx, name + ".to_s8", src.rows, src.cols, DType::s8);
  q.tensor->quant.scale = scale;
  Plan &plan = ctx.plan;
  const auto quantize = resolve<Op::quantize, DType::s8>().fn;
  add_node(ctx, name + ".to_s8", {src}, {q}, [quantize, scale, &plan](const NodeArgs &io) {
    const TensorView &x = io.in(0), &y = io.out(0);
    quantize(x.f32(), x.ld(), y.s8(), y.ld(), x.rows(), x.cols(), scale, plan.threads);
  }, Precision::int8);
  return q;
}

// The int8 matmul node: dst = dequantized(src_q W_q^T) + b, then optionally
// GELU or + dst (f32 dst).
void add_int8_matmul_node(BuildContext &ctx, const std::string &name, const ops::QuantizedLinearParams &p,
                          const TensorRef &src, const TensorRef &dst, bool gelu, bool accumulate) {
  if (dst.dtype() != DType::f32) throw std::logic_error("graph: " + name + " writes f32 rows in int8");
  const TensorRef in = quantized_source(ctx, name, src, p.input_scale);
  auto *op = ctx.make<ops::QuantizedLinear>(p, ops::LinearShape{src.rows, in.ld, dst.ld, accumulate, false},
                                            ctx.packed);
  Plan &plan = ctx.plan;
  add_gemm_node(ctx, name, in, dst, gelu, accumulate, Precision::int8,
                [op, &plan](const TensorView &x, const TensorView &y) { op->run(plan.stream, x.s8(), y.f32()); });
}

// Rows [first, first + count) of each range of a (rows, width) tensor, concatenated.
template <class T>
std::vector<T> gather_rows(const T *t, int64_t width, const std::vector<std::pair<int64_t, int64_t>> &ranges) {
  std::vector<T> out;
  for (auto &r : ranges) out.insert(out.end(), t + r.first * width, t + (r.first + r.second) * width);
  return out;
}

// The shape a linear layer's weight is stored with: (out, in), or
// (out, in, 1, 1) for a 1x1 convolution (the same matrix, row-major).
std::vector<int64_t> matrix_shape(BuildContext &ctx, const std::string &name, int64_t out, int64_t in) {
  const weights::TensorView *t = ctx.weights.file().find(name);
  if (t && t->shape == std::vector<int64_t>{out, in, 1, 1}) return t->shape;
  return {out, in};
}

// `prefix.weight` (out, in) and, if has_bias, `prefix.bias` (out).
ops::LinearParams linear_params(BuildContext &ctx, const std::string &prefix, int64_t in, int64_t out,
                                bool has_bias) {
  ops::LinearParams p;
  p.in = in;
  p.out = out;
  const StoredWeight w = ctx.weights.get_stored(prefix + ".weight", matrix_shape(ctx, prefix + ".weight", out, in));
  p.weight = w.data;
  p.weight_stored_bf16 = w.dtype == weights::StoredDtype::bf16;
  p.bias = has_bias ? ctx.weights.get(prefix + ".bias", {out}) : nullptr;
  return p;
}

// The int8 form of `prefix.weight` (out, in), its input scale and, if
// has_bias, `prefix.bias`.
ops::QuantizedLinearParams int8_params(BuildContext &ctx, const std::string &prefix, int64_t in, int64_t out,
                                       bool has_bias) {
  const QuantizedWeight w = ctx.weights.get_int8(prefix + ".weight", matrix_shape(ctx, prefix + ".weight", out, in));
  const float *s_in = ctx.weights.input_scale(prefix + ".weight");
  if (!s_in)
    throw InputError(ctx.weights.file().path() + ": " + prefix + ".weight is int8 but the file has no " + prefix +
                     ".input_scale (pola quantize writes both)");
  return {w.q, w.scale, *s_in, has_bias ? ctx.weights.get(prefix + ".bias", {out}) : nullptr, in, out};
}

// A linear layer in the plan's GEMM precision: int8 where runs_int8(), else float.
void add_layer(BuildContext &ctx, const std::string &name, const LayerRole &role, const TensorRef &src,
               const TensorRef &dst, LinearEpilogue e) {
  if (runs_int8(ctx, role))
    return add_int8_matmul_node(ctx, name, int8_params(ctx, role.prefix, src.cols, dst.cols, e.bias), src, dst, e.gelu,
                                e.accumulate);
  add_matmul_node(ctx, name, role, linear_params(ctx, role.prefix, src.cols, dst.cols, e.bias), src, dst, e.gelu,
                  e.accumulate, ctx.precisions.gemm);
}

} // namespace

TensorRef gemm_source(BuildContext &ctx, const std::string &name, const TensorRef &src, Precision precision) {
  const DType want = dtype_of(precision);
  if (src.dtype() == want) return src;
  if (src.dtype() != DType::f32) throw std::logic_error("graph: " + name + " would read bf16 rows in fp32");
  const TensorRef half = new_tensor(ctx, name + ".to_bf16", src.rows, src.cols, want);
  Plan &plan = ctx.plan;
  const auto round = resolve<Op::to_bf16, DType::bf16>().fn;
  add_node(ctx, name + ".to_bf16", {src}, {half}, [round, &plan](const NodeArgs &io) {
    const TensorView &x = io.in(0), &y = io.out(0);
    round(x.f32(), x.ld(), y.bf16(), y.ld(), x.rows(), x.cols(), plan.threads);
  }, Precision::bf16);
  return half;
}

void add_linear(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorRef &src,
                const TensorRef &dst, LinearEpilogue epilogue) {
  add_layer(ctx, name, LayerRole{prefix}, src, dst, epilogue);
}

void add_linear_rows(BuildContext &ctx, const std::string &name, const std::string &prefix, int64_t full_out,
                     const std::vector<std::pair<int64_t, int64_t>> &row_ranges, const TensorRef &src,
                     const TensorRef &dst) {
  const int64_t in = src.cols;
  std::string key = prefix;
  for (auto &r : row_ranges) key += ":" + std::to_string(r.first) + "+" + std::to_string(r.second);
  const LayerRole role{prefix};
  const float *b = ctx.weights.get(prefix + ".bias", {full_out});
  // One range is a slice of the stored rows: read in place, no copy (PVT's k and v halves of kv).
  const bool slice = row_ranges.size() == 1;
  const int64_t first = row_ranges.front().first;
  if (runs_int8(ctx, role)) {
    const QuantizedWeight w = ctx.weights.get_int8(prefix + ".weight", {full_out, in});
    ops::QuantizedLinearParams q = int8_params(ctx, prefix, in, full_out, true);
    q.out = dst.cols;
    if (slice) {
      q.weight = w.q + first * in;
      q.weight_scale = w.scale + first;
      q.bias = b + first;
    } else {
      q.weight = ctx.weights.derived_int8(key + ".weight", [&] { return gather_rows(w.q, in, row_ranges); });
      q.weight_scale = ctx.weights.derived(key + ".weight_scale", [&] { return gather_rows(w.scale, 1, row_ranges); });
      q.bias = ctx.weights.derived(key + ".bias", [&] { return gather_rows(b, 1, row_ranges); });
    }
    return add_int8_matmul_node(ctx, name, q, src, dst, false, false);
  }
  const float *w = ctx.weights.get(prefix + ".weight", {full_out, in});
  ops::LinearParams p;
  p.in = in;
  p.out = dst.cols;
  if (slice) {
    p.weight = w + first * in;
    p.bias = b + first;
  } else {
    p.weight = ctx.weights.derived(key + ".weight", [&] { return gather_rows(w, in, row_ranges); });
    p.bias = ctx.weights.derived(key + ".bias", [&] { return gather_rows(b, 1, row_ranges); });
  }
  add_matmul_node(ctx, name, role, p, src, dst, false, false, ctx.precisions.gemm);
}

void add_linear_scaled_into(BuildContext &ctx, const std::string &name, const std::string &prefix,
                            const std::string &scale, const std::vector<int64_t> &scale_shape, const TensorRef &src,
                            const TensorRef &dst) {
  const int64_t in = src.cols, out = dst.cols;
  const float *b = ctx.weights.get(prefix + ".bias", {out});
  const float *s = ctx.weights.get(scale, scale_shape);
  const auto scaled_bias = [&] {
    std::vector<float> f(out);
    for (int64_t r = 0; r < out; ++r) f[r] = b[r] * s[r];
    return f;
  };
  const LayerRole role{prefix};
  if (runs_int8(ctx, role)) {
    // The same fold on the per-channel scales: s_w[r] s[r] q[r, :] == s[r] (s_w[r] q[r, :]).
    ops::QuantizedLinearParams q = int8_params(ctx, prefix, in, out, true);
    const float *ws = q.weight_scale;
    q.weight_scale = ctx.weights.derived(prefix + ".weight_scale*" + scale, [&] {
      std::vector<float> f(out);
      for (int64_t r = 0; r < out; ++r) f[r] = ws[r] * s[r];
      return f;
    });
    q.bias = ctx.weights.derived(prefix + ".bias*" + scale, scaled_bias);
    return add_int8_matmul_node(ctx, name, q, src, dst, false, true);
  }
  const float *w = ctx.weights.get(prefix + ".weight", matrix_shape(ctx, prefix + ".weight", out, in));
  ops::LinearParams p;
  p.in = in;
  p.out = out;
  // Folded once at load: (x W^T + b) * s == x (s W)^T + s b, row by row.
  p.weight = ctx.weights.derived(prefix + ".weight*" + scale, [&] {
    std::vector<float> f(w, w + out * in);
    for (int64_t r = 0; r < out; ++r)
      for (int64_t c = 0; c < in; ++c) f[r * in + c] *= s[r];
    return f;
  });
  p.bias = ctx.weights.derived(prefix + ".bias*" + scale, scaled_bias);
  add_matmul_node(ctx, name, role, p, src, dst, false, true, ctx.precisions.gemm);
}

void add_patch_conv(BuildContext &ctx, const std::string &name, const std::string &prefix,
                    const ops::PatchGrid &grid, const TensorRef &src, const TensorRef &dst) {
  const int64_t p = grid.patch, k = grid.row_width(), rows = grid.batch * grid.out_h() * grid.out_w();
  ops::LinearParams lp;
  lp.in = k;
  lp.out = dst.cols;
  const StoredWeight w = ctx.weights.get_stored(prefix + ".weight", {dst.cols, grid.channels, p, p}); // == (out, k) row-major
  lp.weight = w.data;
  lp.weight_stored_bf16 = w.dtype == weights::StoredDtype::bf16;
  lp.bias = ctx.weights.get(prefix + ".bias", {dst.cols});
  const TensorRef patches = new_tensor(ctx, name + ".patches", rows, k, dtype_of(ctx.precisions.embed));
  Plan &plan = ctx.plan;
  add_node(ctx, name + ".patchify", {src}, {patches}, [grid, &plan](const NodeArgs &io) {
    const TensorView &from = io.in(0), &to = io.out(0);
    ops::patchify(grid, from.data(), from.dtype() == DType::bf16, to.data(), to.dtype() == DType::bf16,
                  plan.threads);
  });
  add_matmul_node(ctx, name, LayerRole{prefix, false}, lp, patches, dst, false, false, ctx.precisions.embed);
}

void add_layernorm(BuildContext &ctx, const std::string &name, const std::string &prefix, const TensorRef &src,
                   const TensorRef &dst, float eps) {
  const float *gamma = ctx.weights.get(prefix + ".weight", {src.cols});
  const float *beta = ctx.weights.get(prefix + ".bias", {src.cols});
  Plan &plan = ctx.plan;
  if (dst.dtype() == DType::bf16) {
    const auto norm = resolve<Op::layernorm, DType::bf16>().fn;
    add_node(ctx, name, {src}, {dst}, [=, &plan](const NodeArgs &io) {
      const TensorView &x = io.in(0), &y = io.out(0);
      norm(x.f32(), x.ld(), y.bf16(), y.ld(), x.rows(), x.cols(), gamma, beta, eps, plan.threads);
    }, Precision::bf16);
    return;
  }
  const auto norm = resolve<Op::layernorm, DType::f32>().fn;
  add_node(ctx, name, {src}, {dst}, [=, &plan](const NodeArgs &io) {
    const TensorView &x = io.in(0), &y = io.out(0);
    norm(x.f32(), x.ld(), y.f32(), y.ld(), x.rows(), x.cols(), gamma, beta, eps, plan.threads);
  });
}

void add_mlp_residual(BuildContext &ctx, const std::string &block, const TensorRef &x, int64_t hidden, float eps) {
  const Precision gemm = ctx.precisions.gemm;
  const TensorRef xn = new_tensor(ctx, block + ".norm2", x.rows, x.cols, dtype_of(gemm));
  add_layernorm(ctx, block + ".norm2", block + ".norm2", x, xn, eps);
  // The fused MLP runs fp32, bf16, or int8 when the file holds both layers in
  // int8. An int8 plan with a layer kept float (`pola quantize
  // --max-accuracy-drop`) and calibration runs (which record each layer's
  // source rows) take the two layers one by one.
  const std::string fc1_prefix = block + ".mlp.fc1", fc2_prefix = block + ".mlp.fc2";
  const bool int8 = gemm == Precision::int8;
  const bool fusable =
      !int8 || (runs_int8(ctx, LayerRole{fc1_prefix}) && runs_int8(ctx, LayerRole{fc2_prefix}));
  if (x.rows >= ops::FusedMlp::kMinRows && fusable && !ctx.calibration) {
    Plan &plan = ctx.plan;
    const ops::FusedMlpShape shape{x.rows, xn.ld, x.ld, plan.threads};
    ops::FusedMlp *op = nullptr;
    if (int8) {
      op = ctx.make<ops::FusedMlp>(int8_params(ctx, fc1_prefix, x.cols, hidden, true),
                                   int8_params(ctx, fc2_prefix, hidden, x.cols, true), shape, ctx.packed);
    } else {
      ops::LinearParams fc1 = linear_params(ctx, fc1_prefix, x.cols, hidden, true);
      ops::LinearParams fc2 = linear_params(ctx, fc2_prefix, hidden, x.cols, true);
      fc1.precision = fc2.precision = gemm;
      op = ctx.make<ops::FusedMlp>(fc1, fc2, shape, ctx.packed);
    }
    ctx.note_scratch_bytes(ops::FusedMlp::chunk_bytes(x.cols, hidden, gemm, plan.threads));
    // out(0) is in(1), updated in place.
    add_node(ctx, block, {xn, x}, {x}, [op](const NodeArgs &io) { op->run(io.in(0).data(), io.out(0).f32()); },
             gemm);
    return;
  }
  // fc1's GELU'd rows in fc2's dtype, GELU by the engine's kernel in both
  // (see ops::FusedMlp): in bf16 fc1 writes f32 rows that gelu_bf16 rounds to
  // bf16 in one pass, in fp32 add_matmul_node applies it in place.
  const TensorRef hid = new_tensor(ctx, block + ".mlp.hidden", x.rows, hidden, dtype_of(gemm));
  if (hid.dtype() == DType::bf16) {
    Plan &plan = ctx.plan;
    const TensorRef pre_gelu = new_tensor(ctx, block + ".mlp.fc1", x.rows, hidden);
    add_linear(ctx, block + ".mlp.fc1", block + ".mlp.fc1", xn, pre_gelu);
    const auto gelu = resolve<Op::gelu, DType::bf16>().fn;
    add_node(ctx, block + ".mlp.gelu", {pre_gelu}, {hid}, [gelu, &plan](const NodeArgs &io) {
      const TensorView &a = io.in(0), &y = io.out(0);
      gelu(a.f32(), a.ld(), y.bf16(), y.ld(), a.rows(), a.cols(), plan.threads);
    }, Precision::bf16);
  } else {
    add_linear(ctx, block + ".mlp.fc1", block + ".mlp.fc1", xn, hid, LinearEpilogue::then_gelu());
  }
  add_linear(ctx, block, block + ".mlp.fc2", hid, x, LinearEpilogue::into_residual());
}

void add_pool_and_head(BuildContext &ctx, const TensorRef &tokens) {
  const PlanKey &key = ctx.plan.key;
  if (!key.pooled && !key.logits) return;
  const int64_t B = ctx.plan.batch, N = tokens.rows / B, C = tokens.cols;
  const TensorRef pooled = new_tensor(ctx, "pooled", B, C);
  add_node(ctx, "pool", {tokens}, {pooled}, [B, N, C](const NodeArgs &io) {
    ops::mean_over_tokens(io.in(0).f32(), io.out(0).f32(), B, N, C);
  });
  if (key.pooled) {
    ctx.plan.graph.mark_result(pooled);
    ctx.plan.pooled = pooled;
  }
  if (!key.logits) return;
  const TensorRef logits = new_tensor(ctx, "logits", B, ctx.cfg.num_classes);
  // The classifier stays float: it is tiny, and its errors go straight into the logits.
  add_layer(ctx, "head", LayerRole{"head", false}, pooled, logits, LinearEpilogue::with_bias());
  ctx.plan.graph.mark_result(logits);
  ctx.plan.logits = logits;
}

} // namespace pola::models
