// Software prefetch of the next block's input rows, spread over the compute
// of the current one. The attention passes alternate a short streaming phase
// (features of a block, read straight from DRAM) with a long register-tile
// phase that touches no new memory; the hardware prefetcher goes idle during
// the latter, so each block started with its loads waiting on DRAM.
#pragma once

#include <cstdint>
#include <xmmintrin.h>

namespace pola::kernels::simd {

class RowPrefetcher {
  struct Stream {
    const char *base; // first row
    int64_t stride;   // bytes between rows
    int64_t bytes;    // bytes per row
  };
  Stream streams_[3] = {};
  int count_ = 0, stream_ = 0;
  int64_t rows_ = 0, row_ = 0, offset_ = 0;

 public:
  // Rows [0, rows) of up to three tensors, `floats` wide, ld floats apart.
  void add(const float *first_row, int64_t ld, int64_t floats) {
    if (first_row && count_ < 3)
      streams_[count_++] = {reinterpret_cast<const char *>(first_row), ld * int64_t(sizeof(float)),
                            floats * int64_t(sizeof(float))};
  }
  void set_rows(int64_t rows) { rows_ = rows; }
  int64_t lines() const {
    int64_t per_row = 0;
    for (int i = 0; i < count_; ++i) per_row += (streams_[i].bytes + 63) / 64;
    return per_row * rows_;
  }
  // Issues up to n prefetches, row by row, each row's tensors in turn.
  void step(int64_t n) {
    for (; n > 0 && row_ < rows_ && count_ > 0; --n) {
      const Stream &s = streams_[stream_];
      _mm_prefetch(s.base + row_ * s.stride + offset_, _MM_HINT_T0);
      offset_ += 64;
      if (offset_ >= s.bytes) {
        offset_ = 0;
        if (++stream_ == count_) stream_ = 0, ++row_;
      }
    }
  }
};

} // namespace pola::kernels::simd
