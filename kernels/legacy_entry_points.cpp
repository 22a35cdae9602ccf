// The legacy entry points (legacy_entry_points.h) as forwarding shims.
#include "kernels/legacy_entry_points.h"

namespace pola::kernels {

namespace {

PolarityAttnArgs convert(const PolaAttnArgs &a) {
  PolarityAttnArgs p;
  p.n_q = a.n_q; p.n_k = a.n_k; p.heads = a.heads; p.head_dim = a.head_dim;
  p.q = a.q; p.ld_q = a.ld_q;
  p.k = a.k; p.ld_k = a.ld_k;
  p.v = a.v; p.ld_v = a.ld_v;
  p.pos_enc = a.pos_enc; p.inv_scale = a.inv_scale;
  p.feature = FeatureMap{FeatureKind::abs_pow, a.power};
  p.out = a.out; p.ld_out = a.ld_out;
  p.threads = a.threads;
  return p;
}

void polarity_fp32(const PolaAttnArgs &a) {
  const PolarityAttnArgs p = convert(a);
  resolve<Op::polarity_attention, DType::fp32>(p).fn(p);
}

void polarity_bf16(const PolaAttnArgs &a) {
  const PolarityAttnArgs p = convert(a);
  resolve<Op::polarity_attention, DType::bf16>(p).fn(p);
}

void window_bf16(const WindowAttnArgs &a) { resolve<Op::window_attention, DType::bf16>(a).fn(a); }

} // namespace

const KernelTable &active() {
  static const KernelTable t{resolve<Op::layernorm, DType::fp32>().fn,
                             resolve<Op::gelu, DType::fp32>().fn,
                             resolve<Op::mul_rows, DType::fp32>().fn,
                             &polarity_fp32,
                             resolve<Op::window_attention, DType::fp32>(WindowAttnArgs{}).fn,
                             resolve<Op::to_bf16, DType::bf16>().fn,
                             resolve<Op::layernorm, DType::bf16>().fn,
                             resolve<Op::gelu, DType::bf16>().fn};
  return t;
}

PolaAttnFn pola_attention_bf16() {
  PolarityAttnArgs probe;
  probe.heads = 1;
  probe.head_dim = 64;
  return resolve<Op::polarity_attention, DType::bf16>(probe).dtype == DType::bf16 ? &polarity_bf16 : nullptr;
}

WindowAttnFn window_attention_bf16() {
  WindowAttnArgs probe;
  probe.tokens = 49;
  probe.heads = 1;
  probe.head_dim = 32;
  return resolve<Op::window_attention, DType::bf16>(probe).dtype == DType::bf16 ? &window_bf16 : nullptr;
}

} // namespace pola::kernels
