#include "engine/ops/linear_int8.h"

#include <stdexcept>

#include "engine/dnnl_context.h"

namespace pola::ops {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

QuantizedLinear::QuantizedLinear(const QuantizedLinearParams &p, const LinearShape &shape, PackedWeightCache &cache)
    : s_(shape) {
  if (s_.ld_src == 0) s_.ld_src = p.in;
  if (s_.ld_dst == 0) s_.ld_dst = p.out;
  if (s_.dst_bf16) throw std::logic_error("QuantizedLinear writes fp32 rows only");
  auto &eng = cpu_engine();
  dnnl::memory::desc src_md({s_.rows, p.in}, dt::s8, {s_.ld_src, 1});
  dnnl::memory::desc user_w({p.in, p.out}, dt::s8, {1, p.in}); // (out, in) row-major as (in, out)
  dnnl::memory::desc any_w({p.in, p.out}, dt::s8, tag::any);
  dnnl::memory::desc dst_md({s_.rows, p.out}, dt::f32, {s_.ld_dst, 1});
  std::vector<float> scales(p.out);
  for (int64_t o = 0; o < p.out; ++o) scales[o] = p.input_scale * p.weight_scale[o];
  dnnl::primitive_attr attr;
  // One scale per output column (mask bit 1: the N dimension of the 2-D matmul).
  attr.set_output_scales(1 << 1, scales);
  dnnl::post_ops po;
  if (s_.accumulate) po.append_sum(1.f);
  attr.set_post_ops(po);
  dnnl::matmul::primitive_desc pd;
  if (p.bias) {
    // oneDNN 2.x applies the output scales after the bias (dst = scale * (acc + bias)),
    // so the bias is given divided by them; tests/engine check the result against b.
    bias_.resize(p.out);
    for (int64_t o = 0; o < p.out; ++o) {
      // A zero scale (a layer scale of 0 folded in) zeroes its column, bias included.
      if (scales[o] == 0 && p.bias[o] != 0) throw std::logic_error("QuantizedLinear: a zero scale with a bias");
      bias_[o] = scales[o] == 0 ? 0.f : p.bias[o] / scales[o];
    }
    dnnl::memory::desc bias_md({1, p.out}, dt::f32, {p.out, 1});
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, any_w, bias_md, dst_md), attr, eng);
    bias_mem_ = dnnl::memory(bias_md, eng, bias_.data());
  } else {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, any_w, dst_md), attr, eng);
  }
  prim_ = dnnl::matmul(pd);
  weights_ = cache.get(p.weight, user_w, pd.weights_desc());
  src_ = dnnl::memory(src_md, eng, DNNL_MEMORY_NONE);
  dst_ = dnnl::memory(dst_md, eng, DNNL_MEMORY_NONE);
  args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}};
  if (p.bias) args_.emplace(DNNL_ARG_BIAS, bias_mem_);
}

void QuantizedLinear::run(dnnl::stream &stream, const int8_t *src, float *dst) {
  src_.set_data_handle(const_cast<int8_t *>(src));
  dst_.set_data_handle(dst);
  prim_.execute(stream, args_);
}

} // namespace pola::ops
