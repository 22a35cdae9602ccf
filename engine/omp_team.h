#pragma once
// Sets the calling thread's OpenMP team size for one scope and restores the
// caller's setting afterwards. oneDNN fixes a primitive's thread count when the
// primitive is created, so the size must be set before plans are built as well
// as before they run; a library must not leave it changed in its caller.
#include <omp.h>

namespace pola {

class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ScopedOmpThreads() { omp_set_num_threads(saved_); }
  ScopedOmpThreads(const ScopedOmpThreads &) = delete;
  ScopedOmpThreads &operator=(const ScopedOmpThreads &) = delete;

 private:
  int saved_;
};

} // namespace pola
