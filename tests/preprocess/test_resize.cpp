// resize_bicubic_u8 against values produced by Pillow 9.4, plus properties
// that must hold whatever the reference: constants stay constant, identity
// sizes are identity, weights of each output sum to one in fixed point.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "engine/preprocess/resample_weights.h"
#include "engine/preprocess/resize_bicubic_u8.h"

using namespace pola::preprocess;

namespace {

// 7x5 RGB test card: p(x, y, c) = (37x + 91y + 53c) mod 256 -- high contrast
// with wrap-arounds, so the cubic overshoots and clipping is exercised.
ImageU8 test_card() {
  ImageU8 img(7, 5, 3);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 7; ++x)
      for (int c = 0; c < 3; ++c) img.row(y)[x * 3 + c] = uint8_t((x * 37 + y * 91 + c * 53) % 256);
  return img;
}

std::vector<int> as_ints(const ImageU8 &img) { return std::vector<int>(img.pixels.begin(), img.pixels.end()); }

} // namespace

TEST_CASE("resize: matches PIL's Image.resize(BICUBIC) byte for byte") {
  // Generated with:
  //   y, x, c = np.mgrid[0:5, 0:7, 0:3]; a = ((x*37 + y*91 + c*53) % 256).astype(np.uint8)
  //   np.asarray(Image.fromarray(a).resize(size, Image.BICUBIC)).flatten()
  const ImageU8 card = test_card();
  // (3, 4): shrink horizontally (antialiased, wider support), grow vertically.
  CHECK(as_ints(resize_bicubic_u8(card, 3, 4)) ==
        std::vector<int>{42, 103, 148, 136, 179, 179, 170, 130, 95,  146, 154, 128, 135, 137, 84,  84,  111, 182,
                         89, 92,  112, 85,  145, 161, 185, 178, 122, 119, 178, 193, 146, 114, 90,  76,  105, 124});
  // (11, 2): grow horizontally, shrink vertically.
  CHECK(as_ints(resize_bicubic_u8(card, 11, 2)) ==
        std::vector<int>{77,  133, 120, 95,  119, 142, 115, 108, 158, 95,  132, 111, 101, 164, 105, 128, 189,
                         136, 165, 143, 160, 159, 125, 155, 107, 157, 115, 122, 124, 133, 144, 94,  153, 88,
                         145, 132, 107, 131, 154, 127, 121, 170, 107, 151, 125, 117, 140, 124, 140, 105, 150,
                         106, 120, 103, 93,  146, 85,  115, 169, 122, 142, 138, 150, 158, 106, 165});
  // (7, 9): width unchanged (PIL skips that pass), height grown; first row only.
  const std::vector<int> tall = as_ints(resize_bicubic_u8(card, 7, 9));
  CHECK(std::vector<int>(tall.begin(), tall.begin() + 21) ==
        std::vector<int>{0, 46, 99, 30, 83, 136, 67, 120, 193, 104, 157, 230, 141, 214, 255, 198, 251, 28, 235, 12, 65});
}

TEST_CASE("resize: a constant image stays constant at any size") {
  for (int value : {0, 1, 128, 254, 255}) {
    ImageU8 img(37, 23, 3);
    std::fill(img.pixels.begin(), img.pixels.end(), uint8_t(value));
    for (auto size : {std::pair<int, int>{256, 256}, {5, 3}, {1, 1}, {37, 100}, {300, 23}}) {
      CAPTURE(value);
      CAPTURE(size.first);
      CAPTURE(size.second);
      const ImageU8 out = resize_bicubic_u8(img, size.first, size.second);
      CHECK(out.width == size.first);
      CHECK(out.height == size.second);
      CHECK(std::all_of(out.pixels.begin(), out.pixels.end(), [&](uint8_t v) { return v == value; }));
    }
  }
}

TEST_CASE("resize: same size is the identity; grey images work") {
  ImageU8 img(9, 4, 1);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t(i * 29);
  CHECK(resize_bicubic_u8(img, 9, 4).pixels == img.pixels);
}

TEST_CASE("resample weights: every output's fixed-point weights sum to ~1 and stay inside the source") {
  for (auto io : {std::pair<int, int>{640, 256}, {256, 640}, {7, 3}, {3, 7}, {1000, 1}, {1, 5}}) {
    const ResampleWeights rw = make_resample_weights(io.first, io.second, kBicubicFilter);
    for (int i = 0; i < io.second; ++i) {
      CAPTURE(i);
      CHECK(rw.first[i] >= 0);
      CHECK(rw.first[i] + rw.count[i] <= io.first);
      const int64_t sum = std::accumulate(&rw.coeffs[size_t(i) * rw.taps], &rw.coeffs[size_t(i) * rw.taps] + rw.count[i],
                                          int64_t(0));
      // Rounding each weight separately may leave the sum a few units off.
      CHECK(std::abs(sum - (int64_t(1) << kResamplePrecisionBits)) <= rw.count[i]);
    }
  }
}
