// Relative-position bias expansion and the shifted-window mask, checked against
// the rules of SPEC section 5 written out independently.
#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

#include "engine/models/swin_tables.h"

using namespace pola::models;

TEST_CASE("relative bias uses (dy + w - 1) * (2w - 1) + (dx + w - 1)") {
  const int64_t w = 3, heads = 2, side = 2 * w - 1;
  std::vector<float> table(side * side * heads);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
  auto bias = expand_relative_bias(table.data(), w, w, w, heads);
  // query (0,0) vs key (2,1): dy = -2, dx = -1 -> index 0 * 5 + 1 = 1
  int64_t i = 0, j = 2 * w + 1;
  CHECK(bias[(0 * 9 + i) * 9 + j] == table[1 * heads + 0]);
  CHECK(bias[(1 * 9 + i) * 9 + j] == table[1 * heads + 1]);
  // query (2,2) vs key (0,0): dy = 2, dx = 2 -> index 4 * 5 + 4 = 24
  CHECK(bias[(1 * 9 + 8) * 9 + 0] == table[24 * heads + 1]);
  // diagonal: dy = dx = 0 -> centre of the table
  CHECK(bias[(0 * 9 + 4) * 9 + 4] == table[(2 * side + 2) * heads]);
}

TEST_CASE("shifted-window mask separates the 3 x 3 regions of the rolled image") {
  const int64_t res = 8, w = 4, s = 2, t = w * w;
  auto mask = shifted_window_mask(res, res, w, s);
  REQUIRE(mask.size() == static_cast<size_t>(4 * t * t));
  // Window 0 lies entirely in region (0, 0): nothing is masked.
  for (int64_t k = 0; k < t * t; ++k) CHECK(mask[k] == 0.f);
  // Window 3 (bottom right) holds four regions; tokens (0,0) and (0,2) of it
  // sit at columns 4 and 6 of the rolled image: regions 1 and 2 -> masked.
  const float *m3 = mask.data() + 3 * t * t;
  CHECK(m3[0 * t + 2] == -100.f);
  CHECK(m3[0 * t + 1] == 0.f);             // columns 4 and 5: same region
  CHECK(m3[0 * t + 2 * w] == -100.f);      // rows 4 and 6: different regions
  CHECK(m3[(2 * w + 2) * t + (3 * w + 3)] == 0.f); // (6,6) and (7,7): same region
}
