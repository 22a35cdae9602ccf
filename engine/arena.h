// A per-plan memory arena: the model builder reserves named slots while it
// builds the graph (each reservation only grows a slot's size), then the arena
// allocates all of them in one block. Running the graph allocates nothing.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string>

namespace pola {

struct Slot {
  std::string name;
  size_t floats = 0;      // capacity requested so far
  float *ptr = nullptr;   // valid after Arena::allocate()
};

class Arena {
 public:
  // Returns the slot called `name`, growing it to hold at least `floats`.
  // Pointers to slots stay valid for the arena's lifetime.
  Slot *reserve(const std::string &name, size_t floats);
  // Allocates every slot (64-byte aligned). Call once, after building.
  void allocate();
  size_t bytes() const { return bytes_; }
  // What allocate() will ask for, so callers can refuse absurd plans first.
  size_t planned_bytes() const;

 private:
  std::deque<Slot> slots_;
  struct FreeDeleter { void operator()(void *p) const; };
  std::unique_ptr<void, FreeDeleter> block_;
  size_t bytes_ = 0;
};

} // namespace pola
