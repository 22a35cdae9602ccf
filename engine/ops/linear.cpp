#include "engine/ops/linear.h"

#include "engine/dnnl_context.h"

namespace pola::ops {

using dt = dnnl::memory::data_type;

Linear::Linear(const LinearParams &p, const LinearShape &s) : p_(p), s_(s) {
  if (s_.ld_src == 0) s_.ld_src = p.in;
  if (s_.ld_dst == 0) s_.ld_dst = p.out;
  src_md_ = dnnl::memory::desc({s_.rows, p.in}, dt::f32, {s_.ld_src, 1});
  // PyTorch's (out, in) row-major weight is the (in, out) matrix with strides (1, in).
  wei_md_ = dnnl::memory::desc({p.in, p.out}, dt::f32, {1, p.in});
  dst_md_ = dnnl::memory::desc({s_.rows, p.out}, dt::f32, {s_.ld_dst, 1});
  dnnl::post_ops po;
  if (s_.gelu) po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
  if (s_.accumulate) po.append_sum(1.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  if (p.bias) {
    bias_md_ = dnnl::memory::desc({1, p.out}, dt::f32, {p.out, 1});
    dnnl::matmul::desc d(src_md_, wei_md_, bias_md_, dst_md_);
    prim_ = dnnl::matmul(dnnl::matmul::primitive_desc(d, attr, cpu_engine()));
  } else {
    dnnl::matmul::desc d(src_md_, wei_md_, dst_md_);
    prim_ = dnnl::matmul(dnnl::matmul::primitive_desc(d, attr, cpu_engine()));
  }
}

void Linear::run(dnnl::stream &stream, const float *src, float *dst) const {
  auto &eng = cpu_engine();
  dnnl::memory ms(src_md_, eng, const_cast<float *>(src));
  dnnl::memory mw(wei_md_, eng, const_cast<float *>(p_.weight));
  dnnl::memory md(dst_md_, eng, dst);
  if (p_.bias) {
    dnnl::memory mb(bias_md_, eng, const_cast<float *>(p_.bias));
    prim_.execute(stream, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}});
  } else {
    prim_.execute(stream, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}});
  }
}

} // namespace pola::ops
