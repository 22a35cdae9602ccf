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
