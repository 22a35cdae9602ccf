// Token-axis interpolation against PyTorch's linear, align_corners=False rule.
#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

#include "engine/ops/token_ops.h"

using namespace pola::ops;

TEST_CASE("interpolate_tokens: 2 -> 4 tokens, half-pixel centres, clamped ends") {
  std::vector<float> src{0.f, 10.f, 4.f, 20.f}; // 2 tokens x 2 channels
  std::vector<float> dst(8);
  interpolate_tokens(src.data(), dst.data(), 1, 2, 4, 2, 1);
  // F.interpolate(torch.tensor([[[0., 4.]]]), size=4, mode='linear') = [0, 1, 3, 4]
  CHECK(dst[0] == doctest::Approx(0.f));
  CHECK(dst[2] == doctest::Approx(1.f));
  CHECK(dst[4] == doctest::Approx(3.f));
  CHECK(dst[6] == doctest::Approx(4.f));
  CHECK(dst[3] == doctest::Approx(12.5f));
}

TEST_CASE("mean_over_tokens and add_broadcast_rows") {
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8}; // batch 2, 2 tokens, 2 channels
  std::vector<float> pos{10, 20, 30, 40};
  add_broadcast_rows(x.data(), pos.data(), 2, 2, 2, 2);
  CHECK(x == std::vector<float>{11, 22, 33, 44, 15, 26, 37, 48});
  std::vector<float> m(4);
  mean_over_tokens(x.data(), m.data(), 2, 2, 2);
  CHECK(m == std::vector<float>{22, 33, 26, 37});
}

TEST_CASE("resize_token_grid: separable bilinear, half-pixel centres (F.interpolate bilinear, align_corners=False)") {
  // A 2 x 2 grid of one channel [[0, 4], [8, 12]] -> 4 x 3. Per axis: 2 -> 4 samples at
  // weights (0, .25, .75, 1) of the second source; 2 -> 3 at (0, .5, 1) (source x = 1/6, 5/6... clamped:
  // (x + .5) * 2/3 - .5 = -1/6 -> 0, 0.5, 7/6 -> index 1).
  const std::vector<float> src{0.f, 4.f, 8.f, 12.f};
  const std::vector<float> dst = resize_token_grid(src.data(), 2, 2, 4, 3, 1);
  REQUIRE(dst.size() == 12);
  const float ys[] = {0.f, .25f, .75f, 1.f}, xs[] = {0.f, .5f, 1.f};
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 3; ++x) CHECK(dst[y * 3 + x] == doctest::Approx(8.f * ys[y] + 4.f * xs[x]));
  // Channels are independent; the same grid is returned unchanged.
  const std::vector<float> two{1.f, -1.f, 2.f, -2.f, 3.f, -3.f, 4.f, -4.f};
  const std::vector<float> same = resize_token_grid(two.data(), 2, 2, 2, 2, 2);
  CHECK(same == two);
  // Shrinking 4 -> 2 averages neighbour pairs (source coordinates 0.5 and 2.5).
  const std::vector<float> line{0.f, 1.f, 2.f, 3.f};
  const std::vector<float> half = resize_token_grid(line.data(), 1, 4, 1, 2, 1);
  CHECK(half[0] == doctest::Approx(0.5f));
  CHECK(half[1] == doctest::Approx(2.5f));
}
