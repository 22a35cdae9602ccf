#include "engine/ops/to_bf16.h"

#include "engine/dnnl_context.h"

namespace pola::ops {

using dt = dnnl::memory::data_type;

ToBf16::ToBf16(int64_t rows, int64_t cols, int64_t ld_src, int64_t ld_dst) {
  auto &eng = cpu_engine();
  src_ = dnnl::memory(dnnl::memory::desc({rows, cols}, dt::f32, {ld_src, 1}), eng, DNNL_MEMORY_NONE);
  dst_ = dnnl::memory(dnnl::memory::desc({rows, cols}, dt::bf16, {ld_dst, 1}), eng, DNNL_MEMORY_NONE);
  prim_ = dnnl::reorder(src_, dst_);
}

void ToBf16::run(dnnl::stream &stream, const float *src, void *dst) {
  src_.set_data_handle(const_cast<float *>(src));
  dst_.set_data_handle(dst);
  prim_.execute(stream, src_, dst_);
}

} // namespace pola::ops
