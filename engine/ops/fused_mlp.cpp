#include "engine/ops/fused_mlp.h"

#include <omp.h>

#include <algorithm>

#include "engine/dnnl_context.h"
#include "engine/omp_team.h"
#include "kernels/registry.h"

namespace pola::ops {

FusedMlp::FusedMlp(const LinearParams &fc1, const LinearParams &fc2, const FusedMlpShape &s,
                   PackedWeightCache &cache)
    : s_(s), precision_(fc1.precision),
      chunk_rows_(precision_ == Precision::bf16 ? kChunkRowsBf16 : kChunkRowsFp32) {
  plan_workers(fc1, fc2, &Worker::linear, cache);
}

FusedMlp::FusedMlp(const QuantizedLinearParams &fc1, const QuantizedLinearParams &fc2, const FusedMlpShape &s,
                   PackedWeightCache &cache)
    : s_(s), precision_(Precision::int8), chunk_rows_(kChunkRowsFp32), fc1_input_scale_(fc1.input_scale),
      fc2_input_scale_(fc2.input_scale) {
  plan_workers(fc1, fc2, &Worker::int8, cache);
  for (Worker &w : workers_) {
    w.src_s8.resize(static_cast<size_t>(chunk_rows_ * in_));
    w.hidden_s8.resize(static_cast<size_t>(chunk_rows_ * hidden_));
  }
}

template <class Gemm, class Params>
void FusedMlp::plan_workers(const Params &fc1, const Params &fc2, Gemms<Gemm> Worker::*gemms,
                            PackedWeightCache &cache) {
  in_ = fc1.in;
  hidden_ = fc1.out;
  if (s_.ld_src == 0) s_.ld_src = fc1.in;
  if (s_.ld_dst == 0) s_.ld_dst = fc2.out;
  s_.threads = std::max(1, s_.threads);
  const bool int8 = precision_ == Precision::int8;
  const int64_t tail = s_.rows % chunk_rows_;
  // Primitives planned for one thread: each runs inside its own thread's share
  // of the parallel loop, where oneDNN does not open a nested team.
  ScopedOmpThreads one(1);
  workers_.resize(static_cast<size_t>(s_.threads));
  // fc1 writes its fp32 result and the engine's GELU runs on it in cache (in
  // bf16, rounding it into the bf16 hidden chunk fc2 reads in the same pass):
  // oneDNN 2.6's erf post-op cost as much as fc1's bf16 products at K = 64 on
  // AVX512-BF16 (bench/gemm_bf16/README.md). In int8 fc1 reads the dense
  // quantized chunk, not the source rows.
  const LinearShape first{chunk_rows_, int8 ? fc1.in : s_.ld_src, hidden_, false, false};
  const LinearShape second{chunk_rows_, hidden_, s_.ld_dst, true};
  for (Worker &w : workers_) {
    Gemms<Gemm> &g = w.*gemms;
    g.fc1 = std::make_unique<Gemm>(fc1, first, cache);
    g.fc2 = std::make_unique<Gemm>(fc2, second, cache);
    if (tail) {
      LinearShape first_tail = first, second_tail = second;
      first_tail.rows = second_tail.rows = tail;
      g.fc1_tail = std::make_unique<Gemm>(fc1, first_tail, cache);
      g.fc2_tail = std::make_unique<Gemm>(fc2, second_tail, cache);
    }
    w.stream = dnnl::stream(cpu_engine());
    w.hidden.resize(static_cast<size_t>(chunk_rows_ * hidden_));
    if (precision_ == Precision::bf16) w.hidden_bf16.resize(static_cast<size_t>(chunk_rows_ * hidden_));
  }
}

size_t FusedMlp::chunk_bytes(int64_t in, int64_t hidden, Precision precision, int threads) {
  const bool bf16 = precision == Precision::bf16, int8 = precision == Precision::int8;
  const int64_t rows = bf16 ? kChunkRowsBf16 : kChunkRowsFp32;
  size_t per_row = static_cast<size_t>(hidden) * sizeof(float);
  if (bf16) per_row += static_cast<size_t>(hidden) * sizeof(uint16_t);
  if (int8) per_row += static_cast<size_t>(in + hidden) * sizeof(int8_t);
  return per_row * static_cast<size_t>(rows) * static_cast<size_t>(std::max(1, threads));
}

void FusedMlp::run(const void *src, float *dst) {
  const int64_t chunks = (s_.rows + chunk_rows_ - 1) / chunk_rows_;
  const auto gelu = kernels::resolve<kernels::Op::gelu, DType::f32>().fn;
  const auto gelu_bf16 = kernels::resolve<kernels::Op::gelu, DType::bf16>().fn;
  const auto quantize = kernels::resolve<kernels::Op::quantize, DType::s8>().fn;
  const size_t elem = precision_ == Precision::bf16 ? 2 : 4;
#pragma omp parallel for num_threads(s_.threads) schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    Worker &w = workers_[static_cast<size_t>(omp_get_thread_num())];
    const int64_t r0 = c * chunk_rows_, n = std::min(chunk_rows_, s_.rows - r0);
    const bool full = n == chunk_rows_;
    const void *src_rows = static_cast<const char *>(src) + r0 * s_.ld_src * elem;
    float *out = dst + r0 * s_.ld_dst;
    if (precision_ == Precision::int8) {
      Gemms<QuantizedLinear> &g = w.int8;
      quantize(static_cast<const float *>(src_rows), s_.ld_src, w.src_s8.data(), in_, n, in_, fc1_input_scale_, 1);
      (full ? g.fc1 : g.fc1_tail)->run(w.stream, w.src_s8.data(), w.hidden.data());
      gelu(w.hidden.data(), n * hidden_, 1);
      quantize(w.hidden.data(), hidden_, w.hidden_s8.data(), hidden_, n, hidden_, fc2_input_scale_, 1);
      (full ? g.fc2 : g.fc2_tail)->run(w.stream, w.hidden_s8.data(), out);
      continue;
    }
    Gemms<Linear> &g = w.linear;
    (full ? g.fc1 : g.fc1_tail)->run(w.stream, src_rows, w.hidden.data());
    const void *fc2_src = w.hidden.data();
    if (precision_ == Precision::bf16) {
      gelu_bf16(w.hidden.data(), hidden_, w.hidden_bf16.data(), hidden_, n, hidden_, 1);
      fc2_src = w.hidden_bf16.data();
    } else {
      gelu(w.hidden.data(), n * hidden_, 1);
    }
    (full ? g.fc2 : g.fc2_tail)->run(w.stream, fc2_src, out);
  }
}

} // namespace pola::ops
