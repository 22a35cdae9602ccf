#include "kernels/scratch.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace pola::kernels {

namespace {

// Blocks this large are mapped and unmapped by the cache itself: a block it
// drops then leaves the process's resident memory at once, where malloc would
// keep a freed block's pages once its mmap threshold has grown past the size.
// Under AddressSanitizer every block comes from malloc, whose redzones catch
// a kernel writing past its scratch.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif
constexpr std::size_t kMapBytes = kAddressSanitizer ? ~std::size_t{0} : std::size_t{128} << 10;

void *allocate_block(std::size_t bytes) {
  if (bytes >= kMapBytes) {
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  return std::aligned_alloc(64, bytes);
}

void free_block(void *p, std::size_t bytes) {
  if (bytes >= kMapBytes) munmap(p, bytes);
  else std::free(p);
}

// Freed blocks are kept per thread and handed out again: a kernel call on a
// small problem (a 7 x 7 stage, one token) would otherwise spend more time in
// mmap, page faults and munmap for its scratch than in arithmetic. OpenMP
// worker threads live as long as the process, so their caches stay warm.
class ThreadCache {
 public:
  ~ThreadCache() {
    for (const Block &b : blocks_) free_block(b.ptr, b.bytes);
  }
  // A cached block of at least `bytes`, or null. On a miss the cached blocks
  // smaller than `bytes` are freed first: the caller is about to allocate a
  // larger one, which serves their sizes too, and keeping both would hold
  // memory no call needs at once (pvt_tiny's low-memory peak: 0.6 MB).
  void *take(std::size_t bytes, std::size_t &capacity) {
    size_t best = blocks_.size();
    for (size_t i = 0; i < blocks_.size(); ++i)
      if (blocks_[i].bytes >= bytes && (best == blocks_.size() || blocks_[i].bytes < blocks_[best].bytes)) best = i;
    if (best == blocks_.size()) {
      for (const Block &b : blocks_) free_block(b.ptr, b.bytes);
      blocks_.clear();
      cached_bytes_ = 0;
      return nullptr;
    }
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
      free_block(blocks_.front().ptr, blocks_.front().bytes);
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
    p = allocate_block(bytes);
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
