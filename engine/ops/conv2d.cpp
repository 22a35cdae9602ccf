#include "engine/ops/conv2d.h"

#include "engine/dnnl_context.h"

namespace pola::ops {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

Conv2d::Conv2d(const Conv2dShape &s, const void *weight, bool weight_stored_bf16, const float *bias,
               PackedWeightCache &cache) {
  const int64_t out_h = (s.in_h + 2 * s.pad - s.kernel) / s.stride + 1;
  const int64_t out_w = (s.in_w + 2 * s.pad - s.kernel) / s.stride + 1;
  auto &eng = cpu_engine();
  const dt compute = s.precision == Precision::bf16 ? dt::bf16 : dt::f32;
  dnnl::memory::desc src_md({s.batch, s.in_ch, s.in_h, s.in_w}, compute, tag::nhwc);
  dnnl::memory::desc dst_md({s.batch, s.out_ch, out_h, out_w}, dt::f32, tag::nhwc);
  // Grouped layout (goihw) for any group count; (out, in/groups, k, k) is its row-major order.
  const dnnl::memory::dims wdims{s.groups, s.out_ch / s.groups, s.in_ch / s.groups, s.kernel, s.kernel};
  const dnnl::memory::desc user_w(wdims, weight_stored_bf16 ? dt::bf16 : dt::f32, tag::goihw);
  // Depthwise weights stay packed even in low-memory mode: they are small, and oneDNN's
  // depthwise kernels need their blocked layout.
  const dnnl::memory::desc packed_w(wdims, compute, tag::any);
  const dnnl::memory::desc any_w = s.groups == 1 ? cache.weights_layout(user_w, packed_w) : packed_w;
  const dnnl::memory::desc bias_md({s.out_ch}, dt::f32, tag::x);
  const dnnl::memory::dims strides{s.stride, s.stride}, pad{s.pad, s.pad};
  dnnl::post_ops po;
  if (s.accumulate) po.append_sum(1.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                          src_md, any_w, bias_md, dst_md, strides, pad, pad);
  const dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
  prim_ = dnnl::convolution_forward(pd);
  weights_ = cache.get(weight, user_w, pd.weights_desc());
  bias_ = dnnl::memory(bias_md, eng, const_cast<float *>(bias));
  src_ = dnnl::memory(src_md, eng, DNNL_MEMORY_NONE);
  dst_ = dnnl::memory(dst_md, eng, DNNL_MEMORY_NONE);
  args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_BIAS, bias_}, {DNNL_ARG_DST, dst_}};
}

void Conv2d::run(dnnl::stream &stream, const void *src, float *dst) {
  // The memory objects in args_ share their handles with src_ and dst_, so
  // pointing these at this call's buffers updates the prebuilt argument map:
  // a call allocates nothing.
  src_.set_data_handle(const_cast<void *>(src));
  dst_.set_data_handle(dst);
  prim_.execute(stream, args_);
}

} // namespace pola::ops
