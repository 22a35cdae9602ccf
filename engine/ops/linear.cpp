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
  if (bf16 && own_bf16_gemm_wins(s_.rows, p.in, p.out) && (own_ = kernels::resolve<kernels::Op::gemm, DType::bf16>(kernels::Bf16GemmArgs{}).fn)) {
    const kernels::Bf16GemmLayout layout(p.in, p.out);
    own_args_.rows = s_.rows;
    own_args_.layout = layout;
    own_args_.ld_a = s_.ld_src;
    own_args_.b = cache.gemm_bf16_tiles(p.weight, p.weight_stored_bf16, layout);
    own_args_.bias = p.bias;
    own_args_.accumulate = s_.accumulate;
    own_args_.dst_bf16 = s_.dst_bf16;
    own_args_.ld_dst = s_.ld_dst;
    // The plan is built inside the model's ScopedOmpThreads, so this is the model's team
    // size, the same one oneDNN's primitives are created for.
    own_args_.threads = omp_get_max_threads();
    return;
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
  // The memory objects in args_ share their handles with src_ and dst_, so
  // pointing these at this call's buffers updates the prebuilt argument map:
  // a call allocates nothing.
  src_.set_data_handle(const_cast<void *>(src));
  dst_.set_data_handle(dst);
  prim_.execute(stream, args_);
}

bool own_bf16_gemm_wins(int64_t rows, int64_t in, int64_t out) {
  // Against oneDNN 2.6's AMX bf16 matmul the own kernel wins on many rows with
  // a short K and a wide N (Swin's stage-1/2 qkvg) and where K is not a
  // multiple of 32 (the 48-wide patch embeddings); oneDNN wins at M = 196 with
  // a wide N, at M = 392 and on narrow N (short calls, where the own kernel's
  // per-call cost shows), and the two are even at M = 49, where both stream
  // the weights from L3 near its read rate (figures: bench/gemm_bf16/README.md).
  if (rows < 784) return false;
  return in % 32 != 0 || (in <= 192 && out >= 288);
}

} // namespace pola::ops
