#include "engine/arena.h"

#include <cstdlib>
#include <new>
#include <stdexcept>

namespace pola {

Slot *Arena::reserve(const std::string &name, size_t floats) {
  if (block_) throw std::logic_error("arena: reserve after allocate (" + name + ")");
  for (auto &s : slots_) {
    if (s.name == name) {
      if (floats > s.floats) s.floats = floats;
      return &s;
    }
  }
  slots_.push_back(Slot{name, floats, nullptr});
  return &slots_.back();
}

void Arena::FreeDeleter::operator()(void *p) const { std::free(p); }

namespace {
constexpr size_t kAlign = 64;
}

size_t Arena::planned_bytes() const {
  size_t total = 0;
  for (auto &s : slots_) total += (s.floats * sizeof(float) + kAlign - 1) / kAlign * kAlign;
  return total == 0 ? kAlign : total;
}

void Arena::allocate() {
  const size_t total = planned_bytes();
  void *p = std::aligned_alloc(kAlign, total);
  if (!p) throw std::bad_alloc();
  block_.reset(p);
  bytes_ = total;
  char *cur = static_cast<char *>(p);
  for (auto &s : slots_) {
    s.ptr = reinterpret_cast<float *>(cur);
    cur += (s.floats * sizeof(float) + kAlign - 1) / kAlign * kAlign;
  }
}

} // namespace pola
