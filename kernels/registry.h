// The kernel registry: every hand-written kernel, keyed by (op, dtype, ISA),
// and the one place that decides which of them runs.
//
// Naming rule. The key's dtype is the precision the node computes in, which
// is what the graph records as the node's precision:
//   layernorm, gelu  keyed bf16: the fp32 op whose result is rounded to bf16
//                    (nearest even) for a bf16 GEMM, bit for bit the fp32
//                    kernel's values rounded (same ISA).
//   to_bf16          keyed bf16: that rounding alone.
//   quantize         keyed s8: float rows to symmetric int8 with a scale.
//   polarity_attention, window_attention
//                    keyed bf16: the op's two matrix products take bf16
//                    operands (rounded to nearest even) with fp32
//                    accumulation; everything else stays fp32 and the inputs
//                    and outputs are fp32.
//   gemm             keyed bf16: bf16 operands, fp32 sums (AMX tiles);
//                    keyed f32: the own fp32 GEMM (kernels/gemm_f32.h), used
//                    where the engine's GEMM provider says so.
// Every (op, dtype) has a scalar reference under Isa::scalar: the test oracle.
//
// Using it:
//   auto k = resolve<Op::polarity_attention, DType::bf16>(shape);
//   k.fn(args);      // k.dtype, k.isa: what it really computes in (record k.dtype)
// resolve() applies the POLA_ISA cap (active_isa()), what the CPU supports,
// the shape (an entry's fits()), and the fallback of a bf16 attention op to
// its fp32 kernel. lookup() gives one exact key, for tests and benchmarks.
#pragma once

#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/dtype.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemm_f32.h"
#include "kernels/isa.h"

namespace pola::kernels {

enum class Op {
  layernorm, gelu, mul_rows, to_bf16, quantize, abs_pow, polarity_attention, window_attention, gemm,
  softmax_attention, depthwise_conv, swish
};

const char *op_name(Op op);

// The shape type of ops whose every entry takes every shape.
struct AnyShape {};

// Signature<op, dtype>: Fn, the kernel's function type; Shape, what fits()
// reads (the argument struct, or AnyShape); falls_back_to_fp32: whether a
// bf16 request without a bf16 kernel for the shape runs the fp32 kernel (same
// Fn). No specialization: no such kernel.
template <Op op, DType dtype> struct Signature;

// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma + beta, biased variance.
template <> struct Signature<Op::layernorm, DType::f32> {
  using Fn = void (*)(const float *x, int64_t ld_x, float *y, int64_t ld_y, int64_t rows, int64_t cols,
                      const float *gamma, const float *beta, float eps, int threads);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
// The same, rounded to bf16: LayerNorm feeding a bf16 GEMM.
template <> struct Signature<Op::layernorm, DType::bf16> {
  using Fn = void (*)(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                      const float *gamma, const float *beta, float eps, int threads);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
// x = 0.5 x (1 + erf(x / sqrt 2)), in place (exact GELU).
template <> struct Signature<Op::gelu, DType::f32> {
  using Fn = void (*)(float *x, int64_t n, int threads);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
// y[r, c] = bf16(gelu(x[r, c])): the hidden rows of a bf16 MLP, GELU'd and
// rounded in one pass while they are in cache.
template <> struct Signature<Op::gelu, DType::bf16> {
  using Fn = void (*)(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                      int threads);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
// y[r, c] *= g[r, c] (strided rows): the PolaFormer gate.
template <> struct Signature<Op::mul_rows, DType::f32> {
  using Fn = void (*)(float *y, int64_t ld_y, const float *g, int64_t ld_g, int64_t rows, int64_t cols,
                      int threads);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
// y[r, c] = bf16(x[r, c]) rounded to nearest even (NaN stays NaN): the source
// rows of a bf16 GEMM. y holds the upper 16 bits of each float.
template <> struct Signature<Op::to_bf16, DType::bf16> {
  using Fn = void (*)(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                      int threads);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
// y[r, c] = clamp(nearest-even(x[r, c] / scale), -127, 127): the source rows
// of an int8 GEMM with a static per-tensor scale (scale > 0).
template <> struct Signature<Op::quantize, DType::s8> {
  using Fn = void (*)(const float *x, int64_t ld_x, int8_t *y, int64_t ld_y, int64_t rows, int64_t cols, float scale,
                      int threads);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
// y[i] = |u[i]|^p[i], 0 where |u[i]| < FLT_MIN: the fp32 polarity core's
// abs_pow feature map alone, so its accuracy can be tested on each ISA.
template <> struct Signature<Op::abs_pow, DType::f32> {
  using Fn = void (*)(const float *u, const float *p, float *y, int64_t n);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
template <> struct Signature<Op::polarity_attention, DType::f32> {
  using Fn = void (*)(const PolarityAttnArgs &args);
  using Shape = PolarityAttnArgs;
  static constexpr bool falls_back_to_fp32 = false;
};
template <> struct Signature<Op::polarity_attention, DType::bf16> {
  using Fn = void (*)(const PolarityAttnArgs &args);
  using Shape = PolarityAttnArgs;
  static constexpr bool falls_back_to_fp32 = true;
};
template <> struct Signature<Op::window_attention, DType::f32> {
  using Fn = void (*)(const WindowAttnArgs &args);
  using Shape = WindowAttnArgs;
  static constexpr bool falls_back_to_fp32 = false;
};
template <> struct Signature<Op::window_attention, DType::bf16> {
  using Fn = void (*)(const WindowAttnArgs &args);
  using Shape = WindowAttnArgs;
  static constexpr bool falls_back_to_fp32 = true;
};
// Global softmax attention with RoPE (GlobalAttnArgs).
template <> struct Signature<Op::softmax_attention, DType::f32> {
  using Fn = void (*)(const GlobalAttnArgs &args);
  using Shape = GlobalAttnArgs;
  static constexpr bool falls_back_to_fp32 = false;
};
// Depthwise convolution over token rows (DepthwiseConvArgs).
template <> struct Signature<Op::depthwise_conv, DType::f32> {
  using Fn = void (*)(const DepthwiseConvArgs &args);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
// x = x * sigmoid(x), in place (Swish / SiLU).
template <> struct Signature<Op::swish, DType::f32> {
  using Fn = void (*)(float *x, int64_t n, int threads);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
// The own fp32 GEMM (kernels/gemm_f32.h); weights packed for the resolved
// ISA's gemm_f32_panel_width().
template <> struct Signature<Op::gemm, DType::f32> {
  using Fn = void (*)(const F32GemmArgs &args);
  using Shape = AnyShape;
  static constexpr bool falls_back_to_fp32 = false;
};
template <> struct Signature<Op::gemm, DType::bf16> {
  using Fn = void (*)(const Bf16GemmArgs &args);
  using Shape = Bf16GemmArgs;
  static constexpr bool falls_back_to_fp32 = false;
};

template <Op op, DType dtype> using KernelFn = typename Signature<op, dtype>::Fn;
template <Op op, DType dtype> using ShapeOf = typename Signature<op, dtype>::Shape;

// One registered kernel.
template <Op op, DType dtype> struct Entry {
  Isa isa;
  KernelFn<op, dtype> fn;
  // The shapes it takes (reads only shape fields, never data); null: all.
  // The kernel itself refuses (throws std::invalid_argument) what fits() rejects.
  bool (*fits)(const ShapeOf<op, dtype> &shape) = nullptr;
  // resolve() picks it only while active_isa() <= up_to: above that a lower
  // entry (or the fp32 fallback) is the faster choice.
  Isa up_to = kIsaTop;
  // A scalar oracle that no production path should run (emulating bf16
  // products in scalar code is slower than the fp32 kernel and no more exact):
  // reached through lookup() only.
  bool oracle_only = false;
};

template <Op op, DType dtype> struct EntryList {
  const Entry<op, dtype> *first, *last;
  const Entry<op, dtype> *begin() const { return first; }
  const Entry<op, dtype> *end() const { return last; }
};
// Every entry of (op, dtype), highest ISA first (registry.cpp).
template <Op op, DType dtype> EntryList<op, dtype> entries();
template <> EntryList<Op::layernorm, DType::f32> entries();
template <> EntryList<Op::layernorm, DType::bf16> entries();
template <> EntryList<Op::gelu, DType::f32> entries();
template <> EntryList<Op::gelu, DType::bf16> entries();
template <> EntryList<Op::mul_rows, DType::f32> entries();
template <> EntryList<Op::to_bf16, DType::bf16> entries();
template <> EntryList<Op::quantize, DType::s8> entries();
template <> EntryList<Op::abs_pow, DType::f32> entries();
template <> EntryList<Op::polarity_attention, DType::f32> entries();
template <> EntryList<Op::polarity_attention, DType::bf16> entries();
template <> EntryList<Op::window_attention, DType::f32> entries();
template <> EntryList<Op::window_attention, DType::bf16> entries();
template <> EntryList<Op::gemm, DType::bf16> entries();
template <> EntryList<Op::gemm, DType::f32> entries();
template <> EntryList<Op::softmax_attention, DType::f32> entries();
template <> EntryList<Op::depthwise_conv, DType::f32> entries();
template <> EntryList<Op::swish, DType::f32> entries();

// What resolve() chose: the kernel and the dtype and ISA it really computes
// in (dtype is fp32 when a bf16 request fell back). fn is null when nothing
// runs the request (an unknown feature map; a bf16 GEMM without AMX).
template <Op op, DType dt> struct Resolved {
  KernelFn<op, dt> fn = nullptr;
  DType dtype = dt;
  Isa isa = Isa::scalar;
  explicit operator bool() const { return fn != nullptr; }
};

// The kernel for (op, dtype) on this machine for `shape`: the entry of the
// highest ISA that is <= active_isa(), that the CPU supports, whose up_to
// allows the active ISA and whose fits() takes the shape, oracles skipped;
// for a bf16 attention op without one, the fp32 kernel the same way.
template <Op op, DType dtype> Resolved<op, dtype> resolve(const ShapeOf<op, dtype> &shape) {
  const Isa top = active_isa();
  for (const Entry<op, dtype> &e : entries<op, dtype>()) {
    if (e.oracle_only || e.isa > top || top > e.up_to || !cpu_supports(e.isa)) continue;
    if (e.fits && !e.fits(shape)) continue;
    return {e.fn, dtype, e.isa};
  }
  if constexpr (Signature<op, dtype>::falls_back_to_fp32) {
    const Resolved<op, DType::f32> r = resolve<op, DType::f32>(shape);
    return {r.fn, r.dtype, r.isa};
  }
  return {};
}
// For ops whose kernels take any shape.
template <Op op, DType dtype> Resolved<op, dtype> resolve() { return resolve<op, dtype>(AnyShape{}); }

// The same with the dtype known only at run time (the graph's precision), for
// the ops whose fp32 and bf16 kernels share one signature.
template <Op op> Resolved<op, DType::f32> resolve(DType dtype, const ShapeOf<op, DType::f32> &shape) {
  static_assert(Signature<op, DType::bf16>::falls_back_to_fp32, "bf16 and fp32 kernels of op share a signature");
  if (dtype == DType::f32) return resolve<op, DType::f32>(shape);
  const Resolved<op, DType::bf16> r = resolve<op, DType::bf16>(shape);
  return {r.fn, r.dtype, r.isa};
}

// Exactly the entry (op, dtype, isa), oracles included, ignoring the POLA_ISA
// cap, up_to and fits(); null if there is none or the CPU lacks isa. For
// tests and benchmarks that compare ISAs.
template <Op op, DType dtype> KernelFn<op, dtype> lookup(Isa isa) {
  if (!cpu_supports(isa)) return nullptr;
  for (const Entry<op, dtype> &e : entries<op, dtype>())
    if (e.isa == isa) return e.fn;
  return nullptr;
}
// The entry's fits() for a shape (true without one, false without the entry).
template <Op op, DType dtype> bool fits(Isa isa, const ShapeOf<op, dtype> &shape) {
  for (const Entry<op, dtype> &e : entries<op, dtype>())
    if (e.isa == isa) return !e.fits || e.fits(shape);
  return false;
}

} // namespace pola::kernels
