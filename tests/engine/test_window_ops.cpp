// Window partition / reverse and patch merging against literal index formulas.
#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

#include "engine/ops/patch_merge.h"
#include "engine/ops/window_partition.h"

using namespace pola::ops;

namespace {
// Value encoding its (b, y, x, c) position, so any misplaced copy is visible.
float code(int64_t b, int64_t y, int64_t x, int64_t c) { return static_cast<float>(((b * 100 + y) * 100 + x) * 10 + c); }
} // namespace

TEST_CASE("window_partition follows torch.roll(-s) then row-major windows") {
  for (int64_t shift : {0, 1, 2}) {
    WindowGrid g{2, 6, 6, 3, 3, shift};
    std::vector<float> src(2 * 6 * 6 * 3), dst(src.size());
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t y = 0; y < 6; ++y)
        for (int64_t x = 0; x < 6; ++x)
          for (int64_t c = 0; c < 3; ++c) src[((b * 6 + y) * 6 + x) * 3 + c] = code(b, y, x, c);
    window_partition(g, src.data(), dst.data(), 2);
    int64_t t = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t wy = 0; wy < 2; ++wy)
        for (int64_t wx = 0; wx < 2; ++wx)
          for (int64_t iy = 0; iy < 3; ++iy)
            for (int64_t ix = 0; ix < 3; ++ix, ++t) {
              // rolled[y][x] = x[(y + s) % H][(x + s) % W]
              int64_t y = (wy * 3 + iy + shift) % 6, x = (wx * 3 + ix + shift) % 6;
              for (int64_t c = 0; c < 3; ++c) CHECK(dst[t * 3 + c] == code(b, y, x, c));
            }
    // The reverse adds each window token back where it came from: x + x = 2x.
    std::vector<float> acc = src;
    window_reverse_add(g, dst.data(), acc.data(), 1);
    for (size_t i = 0; i < src.size(); ++i) CHECK(acc[i] == 2 * src[i]);
  }
}

TEST_CASE("window_partition pads a grid to whole windows with zeros (bottom, right) before the roll") {
  // One image of 3 x 5 tokens, window 2: padded to 4 x 6, 6 windows of 4 tokens.
  for (int64_t shift : {0, 1}) {
    WindowGrid g{1, 3, 5, 2, 2, shift, 4, 6};
    REQUIRE(g.window_rows() == 24);
    std::vector<float> src(3 * 5 * 2), dst(24 * 2, -1.f);
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t x = 0; x < 5; ++x)
        for (int64_t c = 0; c < 2; ++c) src[(y * 5 + x) * 2 + c] = code(0, y, x, c);
    window_partition(g, src.data(), dst.data(), 2);
    int64_t t = 0, zeros = 0;
    for (int64_t wy = 0; wy < 2; ++wy)
      for (int64_t wx = 0; wx < 3; ++wx)
        for (int64_t iy = 0; iy < 2; ++iy)
          for (int64_t ix = 0; ix < 2; ++ix, ++t) {
            const int64_t y = (wy * 2 + iy + shift) % 4, x = (wx * 2 + ix + shift) % 6;
            const bool pad = y >= 3 || x >= 5;
            zeros += pad;
            for (int64_t c = 0; c < 2; ++c) CHECK(dst[t * 2 + c] == (pad ? 0.f : code(0, y, x, c)));
          }
    CHECK(zeros == 24 - 15);
    // Back: every real token once, padding dropped.
    std::vector<float> acc = src;
    window_reverse_add(g, dst.data(), acc.data(), 1);
    for (size_t i = 0; i < src.size(); ++i) CHECK(acc[i] == 2 * src[i]);
  }
}

TEST_CASE("patch merging concatenates x[0::2,0::2], x[1::2,0::2], x[0::2,1::2], x[1::2,1::2]") {
  const int64_t B = 1, H = 4, W = 4, C = 2;
  std::vector<float> src(B * H * W * C), dst(B * 2 * 2 * 4 * C);
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x)
      for (int64_t c = 0; c < C; ++c) src[(y * W + x) * C + c] = code(0, y, x, c);
  patch_merge_gather(src.data(), dst.data(), B, H, W, C, 1);
  const int dy[4] = {0, 1, 0, 1}, dx[4] = {0, 0, 1, 1};
  for (int64_t y = 0; y < 2; ++y)
    for (int64_t x = 0; x < 2; ++x)
      for (int q = 0; q < 4; ++q)
        for (int64_t c = 0; c < C; ++c)
          CHECK(dst[((y * 2 + x) * 4 + q) * C + c] == code(0, 2 * y + dy[q], 2 * x + dx[q], c));
}
