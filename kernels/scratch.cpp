#include "kernels/scratch.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace pola::kernels {

namespace {

// Freed blocks are kept per thread and handed out again: a kernel call on a
// small problem (a 7 x 7 stage, one token) would otherwise spend more time in
// mmap, page faults and munmap for its scratch than in arithmetic. OpenMP
// worker threads live as long as the process, so their caches stay warm.
class ThreadCache {
 public:
  ~ThreadCache() {
    for (const Block &b : blocks_) std::free(b.ptr);
  }
  // A cached block of at least `bytes`, or null.
  void *take(std::size_t bytes, std::size_t &capacity) {
    size_t best = blocks_.size();
    for (size_t i = 0; i < blocks_.size(); ++i)
      if (blocks_[i].bytes >= bytes && (best == blocks_.size() || blocks_[i].bytes < blocks_[best].bytes)) best = i;
    if (best == blocks_.size()) return nullptr;
    Block b = blocks_[best];
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
    cached_bytes_ -= b.bytes;
    capacity = b.bytes;
    return b.ptr;
  }
  void give(void *ptr, std::size_t bytes) {
    blocks_.push_back({ptr, bytes});
    cached_bytes_ += bytes;
    // Bounded: drop the oldest blocks beyond the limits.
    while (blocks_.size() > kMaxBlocks || cached_bytes_ > kMaxBytes) {
      std::free(blocks_.front().ptr);
      cached_bytes_ -= blocks_.front().bytes;
      blocks_.erase(blocks_.begin());
    }
  }

 private:
  struct Block { void *ptr; std::size_t bytes; };
  static constexpr std::size_t kMaxBlocks = 16;
  static constexpr std::size_t kMaxBytes = std::size_t{64} << 20;
  std::vector<Block> blocks_;
  std::size_t cached_bytes_ = 0;
};

ThreadCache &thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

float *allocate(std::size_t floats, std::size_t &capacity) {
  std::size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  void *p = thread_cache().take(bytes, capacity);
  if (!p) {
    p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    capacity = bytes;
  }
  return static_cast<float *>(p);
}

float *zeroed(float *p, std::size_t floats) {
  std::memset(p, 0, floats * sizeof(float));
  return p;
}

} // namespace

ScratchBuffer::ScratchBuffer(std::size_t floats) : data(zeroed(allocate(floats, capacity_), floats)) {}
ScratchBuffer::ScratchBuffer(std::size_t floats, Uninitialized) : data(allocate(floats, capacity_)) {}
ScratchBuffer::~ScratchBuffer() { thread_cache().give(data, capacity_); }

} // namespace pola::kernels
