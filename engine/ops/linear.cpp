#include "engine/ops/linear.h"

#include <omp.h>

#include "engine/dnnl_context.h"

namespace pola::ops {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

Linear::Linear(const LinearParams &p, const LinearShape &s, PackedWeightCache &cache) : p_(p), s_(s) {
  if (s_.ld_src == 0) s_.ld_src = p.in;
  if (s_.ld_dst == 0) s_.ld_dst = p.out;
  const bool bf16 = p.precision == Precision::bf16;
  // The plan is built inside the model's ScopedOmpThreads, so omp_get_max_threads()
  // is the model's team size, the same one oneDNN's primitives are created for.
  switch (choose_gemm(p.precision, s_.rows, p.in, p.out, cache.plain_only())) {
  case GemmProvider::own_amx_bf16: {
    own_ = kernels::resolve<kernels::Op::gemm, DType::bf16>(kernels::Bf16GemmArgs{}).fn;
    const kernels::Bf16GemmLayout layout(p.in, p.out);
    own_args_.rows = s_.rows;
    own_args_.layout = layout;
    own_args_.ld_a = s_.ld_src;
    own_args_.b = cache.gemm_bf16_tiles(p.weight, p.weight_stored_bf16, layout);
    own_args_.bias = p.bias;
    own_args_.accumulate = s_.accumulate;
    own_args_.dst_bf16 = s_.dst_bf16;
    own_args_.ld_dst = s_.ld_dst;
    own_args_.threads = omp_get_max_threads();
    return;
  }
  case GemmProvider::own_f32: {
    const auto k = kernels::resolve<kernels::Op::gemm, DType::f32>();
    own_f32_ = k.fn;
    const kernels::F32GemmLayout layout =
        cache.gemm_f32_layout(p.in, p.out, kernels::gemm_f32_panel_width(k.isa), p.weight_stored_bf16);
    own_f32_args_.rows = s_.rows;
    own_f32_args_.layout = layout;
    own_f32_args_.ld_a = s_.ld_src;
    own_f32_args_.b = cache.gemm_f32_weights(p.weight, p.weight_stored_bf16, layout);
    own_f32_args_.bias = p.bias;
    own_f32_args_.accumulate = s_.accumulate;
    own_f32_args_.ld_dst = s_.ld_dst;
    own_f32_args_.threads = omp_get_max_threads();
    return;
  }
  case GemmProvider::onednn: break;
  }
  auto &eng = cpu_engine();
  const dt compute = bf16 ? dt::bf16 : dt::f32;
  dnnl::memory::desc src_md({s_.rows, p.in}, compute, {s_.ld_src, 1});
  // PyTorch's (out, in) row-major weight is the (in, out) matrix with strides (1, in).
  dnnl::memory::desc user_w({p.in, p.out}, p.weight_stored_bf16 ? dt::bf16 : dt::f32, {1, p.in});
  const dnnl::memory::desc any_w = cache.weights_layout(user_w, {{p.in, p.out}, compute, tag::any});
  dnnl::memory::desc dst_md({s_.rows, p.out}, bf16 && s_.dst_bf16 ? dt::bf16 : dt::f32, {s_.ld_dst, 1});
  dnnl::post_ops po;
  if (s_.accumulate) po.append_sum(1.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  dnnl::matmul::primitive_desc pd;
  if (p.bias) {
    dnnl::memory::desc bias_md({1, p.out}, dt::f32, {p.out, 1});
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, any_w, bias_md, dst_md), attr, eng);
    bias_ = dnnl::memory(bias_md, eng, const_cast<float *>(p.bias));
  } else {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, any_w, dst_md), attr, eng);
  }
  prim_ = dnnl::matmul(pd);
  weights_ = cache.get(p.weight, user_w, pd.weights_desc());
  src_ = dnnl::memory(src_md, eng, DNNL_MEMORY_NONE);
  dst_ = dnnl::memory(dst_md, eng, DNNL_MEMORY_NONE);
  args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}};
  if (bias_) args_.emplace(DNNL_ARG_BIAS, bias_);
}

void Linear::run(dnnl::stream &stream, const void *src, void *dst) {
  if (own_) {
    own_args_.a = static_cast<const uint16_t *>(src);
    own_args_.dst = dst;
    own_(own_args_);
    return;
  }
  if (own_f32_) {
    own_f32_args_.a = static_cast<const float *>(src);
    own_f32_args_.dst = static_cast<float *>(dst);
    own_f32_(own_f32_args_);
    return;
  }
  // The memory objects in args_ share their handles with src_ and dst_, so
  // pointing these at this call's buffers updates the prebuilt argument map:
  // a call allocates nothing.
  src_.set_data_handle(const_cast<void *>(src));
  dst_.set_data_handle(dst);
  prim_.execute(stream, args_);
}

} // namespace pola::ops
