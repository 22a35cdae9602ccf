#include "engine/arena.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <new>
#include <numeric>

namespace pola {
namespace {

constexpr size_t kAlign = 64;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

bool overlap(const TensorLifetime &a, const TensorLifetime &b) { return a.first <= b.last && b.first <= a.last; }

} // namespace

ArenaLayout plan_arena(const std::vector<TensorLifetime> &tensors) {
  const size_t n = tensors.size();
  ArenaLayout layout;
  layout.offsets.assign(n, 0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first, then by first use: a deterministic layout.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (tensors[a].bytes != tensors[b].bytes) return tensors[a].bytes > tensors[b].bytes;
    return tensors[a].first < tensors[b].first;
  });
  std::vector<size_t> placed;  // indices, kept sorted by offset
  for (size_t i : order) {
    const size_t size = aligned(tensors[i].bytes);
    layout.sum_bytes += size;
    size_t cursor = 0, best = 0, best_gap = std::numeric_limits<size_t>::max();
    bool found = false;
    for (size_t j : placed) {
      if (!overlap(tensors[i], tensors[j])) continue;
      const size_t start = layout.offsets[j];
      if (start >= cursor && start - cursor >= size && start - cursor < best_gap) {
        best = cursor;
        best_gap = start - cursor;
        found = true;
      }
      cursor = std::max(cursor, start + aligned(tensors[j].bytes));
    }
    layout.offsets[i] = found ? best : cursor;
    layout.peak_bytes = std::max(layout.peak_bytes, layout.offsets[i] + size);
    auto at = std::upper_bound(placed.begin(), placed.end(), layout.offsets[i],
                               [&](size_t off, size_t j) { return off < layout.offsets[j]; });
    placed.insert(at, i);
  }
  if (layout.peak_bytes == 0) layout.peak_bytes = kAlign;
  return layout;
}

void Arena::FreeDeleter::operator()(void *p) const { std::free(p); }

void Arena::allocate(size_t bytes) {
  bytes = aligned(bytes == 0 ? 1 : bytes);
  void *p = std::aligned_alloc(kAlign, bytes);
  if (!p) throw std::bad_alloc();
  block_.reset(p);
}

} // namespace pola
