// Aligned scratch memory for kernels. Defined out of line (scratch.cpp, built
// without ISA flags) so ISA translation units share no inline code with the
// rest of the library: the linker can never pick an AVX-512 copy of a helper
// for the scalar path.
#pragma once

#include <cstddef>

namespace pola::kernels {

// 64-byte aligned, zero-initialised float buffer. On destruction its memory
// goes back to a small per-thread cache that the next buffer of that thread
// reuses (kernels are called over and over on the same shapes). Every op
// takes its scratch from that cache, so a model holds about the scratch of its
// largest op, not the sum over its ops.
class ScratchBuffer {
  std::size_t capacity_ = 0; // bytes held (a reused block may be larger); set before `data`

 public:
  explicit ScratchBuffer(std::size_t floats);
  // For a buffer the caller overwrites in full before reading it.
  struct Uninitialized {};
  ScratchBuffer(std::size_t floats, Uninitialized);
  ~ScratchBuffer();
  ScratchBuffer(const ScratchBuffer &) = delete;
  ScratchBuffer &operator=(const ScratchBuffer &) = delete;

  float *const data;
};

} // namespace pola::kernels
