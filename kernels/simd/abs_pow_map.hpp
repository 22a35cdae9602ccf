// y = |u|^p elementwise (abs_pow, common.hpp): the feature map of the
// polarity core as a table entry, so tests reach each ISA's version.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/simd/common.hpp"

namespace pola::kernels::simd {

template <class A> void abs_pow_map(const float *u, const float *p, float *y, int64_t n) {
  constexpr int L = kLanes<A>;
  for (int64_t i = 0; i < n; i += L) {
    const int w = int(std::min<int64_t>(L, n - i));
    store_first<A>(y + i, abs_pow<A>(load_first<A>(u + i, w), load_first<A>(p + i, w)), w);
  }
}

} // namespace pola::kernels::simd
