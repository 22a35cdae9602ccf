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
// In int8 (both layers stored int8 by `pola quantize`) the source rows are
// float: each chunk is quantized with fc1's input scale, fc1's fp32 result is
// GELU'd, quantized with fc2's input scale and read by fc2. The quantization
// is the kernels' Op::quantize, as in the unfused graph's `.to_s8` nodes, and
// the int8 products are exact, so every row equals the unfused plan's.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <dnnl.hpp>

#include "engine/ops/linear.h"
#include "engine/ops/linear_int8.h"
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

  // fp32 or bf16, as fc1.precision says.
  FusedMlp(const LinearParams &fc1, const LinearParams &fc2, const FusedMlpShape &s, PackedWeightCache &cache);
  // int8, in chunks of kChunkRowsFp32 rows (the hidden chunk is fp32 here too;
  // no int8 chunk size was measured apart).
  FusedMlp(const QuantizedLinearParams &fc1, const QuantizedLinearParams &fc2, const FusedMlpShape &s,
           PackedWeightCache &cache);
  // What the chunks of an MLP `in` -> `hidden` wide take from the threads'
  // scratch caches while it runs, all threads together.
  static size_t chunk_bytes(int64_t in, int64_t hidden, Precision precision, int threads);
  // Not thread-safe: a plan (and its ops) serves one call at a time.
  // src: float rows, or bf16 rows in bf16 precision (ld_src in elements).
  void run(const void *src, float *dst);

 private:
  // A chunk's two GEMMs: Linear in fp32/bf16, QuantizedLinear in int8.
  template <class Gemm> struct Gemms {
    std::unique_ptr<Gemm> fc1, fc2;           // chunk_rows_ rows
    std::unique_ptr<Gemm> fc1_tail, fc2_tail; // the last rows % chunk_rows_ rows, if any
  };
  struct Worker {
    Gemms<Linear> linear;
    Gemms<QuantizedLinear> int8;
    dnnl::stream stream;
  };
  // A thread's chunk buffers for one run, carved from one block of its scratch
  // cache: the cache is shared with every other op, so the model holds the
  // largest op's chunks, not every MLP's.
  struct ChunkBuffers;
  // Shared by the constructors: the row strides, the workers and their GEMMs.
  template <class Gemm, class Params>
  void plan_workers(const Params &fc1, const Params &fc2, Gemms<Gemm> Worker::*gemms, PackedWeightCache &cache);

  FusedMlpShape s_;
  Precision precision_ = Precision::fp32;
  int64_t in_ = 0, hidden_ = 0;
  int64_t chunk_rows_ = kChunkRowsFp32;
  float fc1_input_scale_ = 0, fc2_input_scale_ = 0; // int8
  std::vector<Worker> workers_;

  struct ChunkKernels;
  void run_chunk(const ChunkKernels &k, Worker &w, ChunkBuffers &b, int64_t c, const void *src, float *dst) const;
};

} // namespace pola::ops
