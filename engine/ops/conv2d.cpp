#include "engine/ops/conv2d.h"

#include "engine/dnnl_context.h"

namespace pola::ops {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

Conv2d::Conv2d(const Conv2dShape &s, const float *weight, const float *bias) : s_(s), bias_(bias) {
  out_h_ = (s.in_h + 2 * s.pad - s.kernel) / s.stride + 1;
  out_w_ = (s.in_w + 2 * s.pad - s.kernel) / s.stride + 1;
  auto &eng = cpu_engine();
  src_md_ = dnnl::memory::desc({s.batch, s.in_ch, s.in_h, s.in_w}, dt::f32, s.src_nchw ? tag::nchw : tag::nhwc);
  dst_md_ = dnnl::memory::desc({s.batch, s.out_ch, out_h_, out_w_}, dt::f32, tag::nhwc);
  dnnl::memory::dims wdims;
  dnnl::memory::desc user_w;
  if (s.groups == 1) {
    wdims = {s.out_ch, s.in_ch, s.kernel, s.kernel};
    user_w = dnnl::memory::desc(wdims, dt::f32, tag::oihw);
  } else {
    wdims = {s.groups, s.out_ch / s.groups, s.in_ch / s.groups, s.kernel, s.kernel};
    user_w = dnnl::memory::desc(wdims, dt::f32, tag::goihw);
  }
  dnnl::memory::desc any_w(wdims, dt::f32, tag::any);
  dnnl::memory::dims strides{s.stride, s.stride}, pad{s.pad, s.pad};
  dnnl::post_ops po;
  if (s.accumulate) po.append_sum(1.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  dnnl::convolution_forward::primitive_desc pd;
  if (bias) {
    bias_md_ = dnnl::memory::desc({s.out_ch}, dt::f32, tag::x);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      src_md_, any_w, bias_md_, dst_md_, strides, pad, pad);
    pd = dnnl::convolution_forward::primitive_desc(d, attr, eng);
  } else {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      src_md_, any_w, dst_md_, strides, pad, pad);
    pd = dnnl::convolution_forward::primitive_desc(d, attr, eng);
  }
  prim_ = dnnl::convolution_forward(pd);
  // Reorder the weights once into the layout the primitive chose.
  dnnl::memory user(user_w, eng, const_cast<float *>(weight));
  weights_ = dnnl::memory(pd.weights_desc(), eng);
  dnnl::stream st(eng);
  dnnl::reorder(user, weights_).execute(st, user, weights_);
  st.wait();
}

void Conv2d::run(dnnl::stream &stream, const float *src, float *dst) const {
  auto &eng = cpu_engine();
  dnnl::memory ms(src_md_, eng, const_cast<float *>(src));
  dnnl::memory md(dst_md_, eng, dst);
  if (bias_) {
    dnnl::memory mb(bias_md_, eng, const_cast<float *>(bias_));
    prim_.execute(stream, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}});
  } else {
    prim_.execute(stream, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, md}});
  }
}

} // namespace pola::ops
