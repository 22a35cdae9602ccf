// dst += fc2(GELU(fc1(src))) for many token rows, computed in chunks of rows
// that each stay in the L2 cache of the thread that owns them: the hidden
// activations (4-8x wider than the tokens) never go out to memory, GELU runs
// on them while they are hot, and fc2 reads them straight back. Each thread
// drives its own single-threaded oneDNN matmuls (created for one thread,
// sharing the packed weights), so chunks run in parallel with no barrier
// between the two GEMMs. Every row's result depends only on its chunk
// index, never on the thread count.
// In bf16 precision (fc1's) the source rows are bf16, fc1 stores its fp32
// result and GELU rounds it into a bf16 hidden chunk for fc2 (one pass).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <dnnl.hpp>

#include "engine/ops/linear.h"
#include "engine/packed_weights.h"

namespace pola::ops {

struct FusedMlpShape {
  int64_t rows = 0;
  int64_t ld_src = 0, ld_dst = 0; // row strides (0 = dense)
  int threads = 1;
};

class FusedMlp {
 public:
  // Rows per chunk: the hidden chunk (rows x hidden floats) stays in L2.
  // fp32: 64. bf16: 128, as each GEMM call is faster there and a call's
  // fixed cost weighs more: swin_t's stage-1/2 bf16 MLPs ran faster with 128
  // rows than with 64, while in fp32 128 rows measured the same as 64, and
  // 256 was slower in both (figures: bench/gemm_bf16/README.md).
  static constexpr int64_t kChunkRowsFp32 = 64;
  static constexpr int64_t kChunkRowsBf16 = 128;
  // Below this many rows the chunks are too few to share among threads and
  // the plain two-GEMM path (GELU as the engine's pass after fc1) is used instead.
  static constexpr int64_t kMinRows = 8 * kChunkRowsFp32;

  FusedMlp(const LinearParams &fc1, const LinearParams &fc2, const FusedMlpShape &s, PackedWeightCache &cache);
  // What the per-thread hidden chunks of an MLP `hidden` wide hold (the
  // plan's memory beside its arena).
  static size_t chunk_bytes(int64_t hidden, Precision precision, int threads);
  // Not thread-safe: a plan (and its ops) serves one call at a time.
  // src: float rows, or bf16 rows in bf16 precision (ld_src in elements).
  void run(const void *src, float *dst);

 private:
  struct Worker {
    std::unique_ptr<Linear> fc1, fc2;           // chunk_rows_ rows
    std::unique_ptr<Linear> fc1_tail, fc2_tail; // the last rows % chunk_rows_ rows, if any
    dnnl::stream stream;
    std::vector<float> hidden;
    std::vector<uint16_t> hidden_bf16; // bf16 precision: the GELU'd chunk fc2 reads
  };
  FusedMlpShape s_;
  int64_t hidden_ = 0;
  bool bf16_ = false;
  int64_t chunk_rows_ = kChunkRowsFp32;
  std::vector<Worker> workers_;
};

} // namespace pola::ops
