// The graph's activation memory: one 64-byte aligned block, laid out from
// tensor lifetimes (ggml-alloc style) so that tensors never alive at the same
// node share bytes. Planning happens once per plan; running allocates nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace pola {

// A tensor's size and the nodes it is alive over, [first, last] inclusive.
struct TensorLifetime {
  size_t bytes = 0;
  size_t first = 0, last = 0;
};

struct ArenaLayout {
  std::vector<size_t> offsets;  // bytes from the block's start, per tensor, 64-byte aligned
  size_t peak_bytes = 0;        // the block's size
  size_t sum_bytes = 0;         // what one buffer per tensor would need
};

// Places the largest tensors first, each in the smallest gap (best fit) left
// by the already placed tensors whose lifetimes overlap its own.
ArenaLayout plan_arena(const std::vector<TensorLifetime> &tensors);

class Arena {
 public:
  void allocate(size_t bytes);  // once
  char *base() const { return static_cast<char *>(block_.get()); }

 private:
  struct FreeDeleter { void operator()(void *p) const; };
  std::unique_ptr<void, FreeDeleter> block_;
};

} // namespace pola
