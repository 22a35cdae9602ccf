// Float rows -> bf16 rows (round to nearest even), the source of a bf16 GEMM,
// as a oneDNN reorder created once per plan. Its own graph node, so the
// profile shows what the conversion costs next to the GEMM it feeds.
#pragma once

#include <cstdint>
#include <dnnl.hpp>

namespace pola::ops {

class ToBf16 {
 public:
  // rows x cols floats with row stride ld_src -> bf16 with row stride ld_dst (elements).
  ToBf16(int64_t rows, int64_t cols, int64_t ld_src, int64_t ld_dst);
  // Not thread-safe: a plan (and its ops) serves one call at a time.
  void run(dnnl::stream &stream, const float *src, void *dst);

 private:
  dnnl::memory src_, dst_;
  dnnl::reorder prim_;
};

} // namespace pola::ops
