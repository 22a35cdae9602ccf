#include "engine/ops/fused_mlp.h"

#include <omp.h>

#include <algorithm>

#include "engine/dnnl_context.h"
#include "engine/omp_team.h"
#include "kernels/registry.h"

namespace pola::ops {

FusedMlp::FusedMlp(const LinearParams &fc1, const LinearParams &fc2, const FusedMlpShape &s,
                   PackedWeightCache &cache)
    : s_(s), hidden_(fc1.out), bf16_(fc1.precision == Precision::bf16),
      chunk_rows_(bf16_ ? kChunkRowsBf16 : kChunkRowsFp32) {
  if (s_.ld_src == 0) s_.ld_src = fc1.in;
  if (s_.ld_dst == 0) s_.ld_dst = fc2.out;
  s_.threads = std::max(1, s_.threads);
  const int64_t tail = s_.rows % chunk_rows_;
  // Primitives planned for one thread: each runs inside its own thread's share
  // of the parallel loop, where oneDNN does not open a nested team.
  ScopedOmpThreads one(1);
  workers_.resize(static_cast<size_t>(s_.threads));
  // fc1 writes its fp32 result and the engine's GELU runs on it in cache (in
  // bf16, rounding it into the bf16 hidden chunk fc2 reads in the same pass):
  // oneDNN 2.6's erf post-op cost as much as fc1's bf16 products at K = 64 on
  // AVX512-BF16 (bench/gemm_bf16/README.md).
  const LinearShape first{chunk_rows_, s_.ld_src, hidden_, false, false};
  const LinearShape second{chunk_rows_, hidden_, s_.ld_dst, true};
  for (Worker &w : workers_) {
    w.fc1 = std::make_unique<Linear>(fc1, first, cache);
    w.fc2 = std::make_unique<Linear>(fc2, second, cache);
    if (tail) {
      LinearShape first_tail = first, second_tail = second;
      first_tail.rows = second_tail.rows = tail;
      w.fc1_tail = std::make_unique<Linear>(fc1, first_tail, cache);
      w.fc2_tail = std::make_unique<Linear>(fc2, second_tail, cache);
    }
    w.stream = dnnl::stream(cpu_engine());
    w.hidden.resize(static_cast<size_t>(chunk_rows_ * hidden_));
    if (bf16_) w.hidden_bf16.resize(static_cast<size_t>(chunk_rows_ * hidden_));
  }
}

size_t FusedMlp::chunk_bytes(int64_t hidden, Precision precision, int threads) {
  const bool bf16 = precision == Precision::bf16;
  const int64_t rows = bf16 ? kChunkRowsBf16 : kChunkRowsFp32;
  const size_t per_worker = static_cast<size_t>(rows * hidden) * (sizeof(float) + (bf16 ? sizeof(uint16_t) : 0));
  return per_worker * static_cast<size_t>(std::max(1, threads));
}

void FusedMlp::run(const void *src, float *dst) {
  const int64_t chunks = (s_.rows + chunk_rows_ - 1) / chunk_rows_;
  const auto gelu = kernels::resolve<kernels::Op::gelu, DType::f32>().fn;
  const auto gelu_bf16 = kernels::resolve<kernels::Op::gelu, DType::bf16>().fn;
#pragma omp parallel for num_threads(s_.threads) schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    Worker &w = workers_[static_cast<size_t>(omp_get_thread_num())];
    const int64_t r0 = c * chunk_rows_, n = std::min(chunk_rows_, s_.rows - r0);
    const bool full = n == chunk_rows_;
    const size_t elem = bf16_ ? 2 : 4;
    (full ? w.fc1 : w.fc1_tail)->run(w.stream, static_cast<const char *>(src) + r0 * s_.ld_src * elem, w.hidden.data());
    const void *fc2_src = w.hidden.data();
    if (bf16_) {
      gelu_bf16(w.hidden.data(), hidden_, w.hidden_bf16.data(), hidden_, n, hidden_, 1);
      fc2_src = w.hidden_bf16.data();
    } else {
      gelu(w.hidden.data(), n * hidden_, 1);
    }
    (full ? w.fc2 : w.fc2_tail)->run(w.stream, fc2_src, dst + r0 * s_.ld_dst);
  }
}

} // namespace pola::ops
