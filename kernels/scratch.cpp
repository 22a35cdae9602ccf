#include "kernels/scratch.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace pola::kernels {

namespace {
float *allocate_zeroed(std::size_t floats) {
  std::size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  void *p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return static_cast<float *>(p);
}
} // namespace

ScratchBuffer::ScratchBuffer(std::size_t floats) : data(allocate_zeroed(floats)) {}
ScratchBuffer::~ScratchBuffer() { std::free(data); }

} // namespace pola::kernels
