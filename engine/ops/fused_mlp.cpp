#include "engine/ops/fused_mlp.h"

#include <omp.h>

#include <algorithm>

#include "engine/dnnl_context.h"
#include "engine/omp_team.h"
#include "kernels/registry.h"
#include "kernels/scratch.h"

namespace pola::ops {

namespace {

// Bytes of one chunk buffer, rounded so the next one starts 64-byte aligned.
size_t aligned_bytes(int64_t elements, size_t elem) {
  return (static_cast<size_t>(elements) * elem + 63) / 64 * 64;
}

} // namespace

struct FusedMlp::ChunkBuffers {
  // Per precision: fp32 needs the hidden chunk fc1 writes; bf16 adds the
  // GELU'd bf16 chunk fc2 reads; int8 adds the quantized chunks fc1 and fc2 read.
  static size_t bytes(int64_t rows, int64_t in, int64_t hidden, Precision p) {
    size_t total = aligned_bytes(rows * hidden, sizeof(float));
    if (p == Precision::bf16) total += aligned_bytes(rows * hidden, sizeof(uint16_t));
    if (p == Precision::int8) total += aligned_bytes(rows * in, 1) + aligned_bytes(rows * hidden, 1);
    return total;
  }
  ChunkBuffers(int64_t rows, int64_t in, int64_t hidden, Precision p)
      : block((bytes(rows, in, hidden, p) + sizeof(float) - 1) / sizeof(float)) {
    char *at = reinterpret_cast<char *>(block.data);
    this->hidden = reinterpret_cast<float *>(at);
    at += aligned_bytes(rows * hidden, sizeof(float));
    if (p == Precision::bf16) hidden_bf16 = reinterpret_cast<uint16_t *>(at);
    if (p == Precision::int8) {
      src_s8 = reinterpret_cast<int8_t *>(at);
      hidden_s8 = reinterpret_cast<int8_t *>(at + aligned_bytes(rows * in, 1));
    }
  }
  kernels::ScratchBuffer block;
  float *hidden = nullptr;
  uint16_t *hidden_bf16 = nullptr;
  int8_t *src_s8 = nullptr, *hidden_s8 = nullptr;
};

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
  }
}

size_t FusedMlp::chunk_bytes(int64_t in, int64_t hidden, Precision precision, int threads) {
  const int64_t rows = precision == Precision::bf16 ? kChunkRowsBf16 : kChunkRowsFp32;
  return ChunkBuffers::bytes(rows, in, hidden, precision) * static_cast<size_t>(std::max(1, threads));
}

// The element-wise kernels of a chunk, resolved once per run.
struct FusedMlp::ChunkKernels {
  decltype(kernels::resolve<kernels::Op::gelu, DType::f32>().fn) gelu =
      kernels::resolve<kernels::Op::gelu, DType::f32>().fn;
  decltype(kernels::resolve<kernels::Op::gelu, DType::bf16>().fn) gelu_bf16 =
      kernels::resolve<kernels::Op::gelu, DType::bf16>().fn;
  decltype(kernels::resolve<kernels::Op::quantize, DType::s8>().fn) quantize =
      kernels::resolve<kernels::Op::quantize, DType::s8>().fn;
};

void FusedMlp::run(const void *src, float *dst) {
  const int64_t chunks = (s_.rows + chunk_rows_ - 1) / chunk_rows_;
  const ChunkKernels k;
#pragma omp parallel num_threads(s_.threads)
  {
    ChunkBuffers buffers(chunk_rows_, in_, hidden_, precision_);
    Worker &w = workers_[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 1)
    for (int64_t c = 0; c < chunks; ++c) run_chunk(k, w, buffers, c, src, dst);
  }
}

void FusedMlp::run_chunk(const ChunkKernels &k, Worker &w, ChunkBuffers &b, int64_t c, const void *src,
                         float *dst) const {
  const size_t elem = precision_ == Precision::bf16 ? 2 : 4;
  const int64_t r0 = c * chunk_rows_, n = std::min(chunk_rows_, s_.rows - r0);
  const bool full = n == chunk_rows_;
  const void *src_rows = static_cast<const char *>(src) + r0 * s_.ld_src * elem;
  float *out = dst + r0 * s_.ld_dst;
  if (precision_ == Precision::int8) {
    Gemms<QuantizedLinear> &g = w.int8;
    k.quantize(static_cast<const float *>(src_rows), s_.ld_src, b.src_s8, in_, n, in_, fc1_input_scale_, 1);
    (full ? g.fc1 : g.fc1_tail)->run(w.stream, b.src_s8, b.hidden);
    k.gelu(b.hidden, n * hidden_, 1);
    k.quantize(b.hidden, hidden_, b.hidden_s8, hidden_, n, hidden_, fc2_input_scale_, 1);
    (full ? g.fc2 : g.fc2_tail)->run(w.stream, b.hidden_s8, out);
    return;
  }
  Gemms<Linear> &g = w.linear;
  (full ? g.fc1 : g.fc1_tail)->run(w.stream, src_rows, b.hidden);
  const void *fc2_src = b.hidden;
  if (precision_ == Precision::bf16) {
    k.gelu_bf16(b.hidden, hidden_, b.hidden_bf16, hidden_, n, hidden_, 1);
    fc2_src = b.hidden_bf16;
  } else {
    k.gelu(b.hidden, n * hidden_, 1);
  }
  (full ? g.fc2 : g.fc2_tail)->run(w.stream, fc2_src, out);
}

} // namespace pola::ops
