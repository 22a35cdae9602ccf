// The steps after resizing (center crop, normalize), the spec parser and the
// whole chain on a file.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>

#include "engine/preprocess/preprocess.h"
#include "image_writers.h"
#include "weights/error.h"

using namespace pola::preprocess;

TEST_CASE("center crop: torchvision's offsets, round-half-to-even included") {
  CHECK(center_crop_offset(256, 224) == 16);
  CHECK(center_crop_offset(224, 224) == 0);
  CHECK(center_crop_offset(255, 224) == 16); // 15.5 -> 16
  CHECK(center_crop_offset(257, 224) == 16); // 16.5 -> 16
  CHECK(center_crop_offset(259, 224) == 18); // 17.5 -> 18
  CHECK(center_crop_offset(5, 4) == 0);      // 0.5 -> 0
  CHECK(center_crop_offset(7, 4) == 2);      // 1.5 -> 2

  ImageU8 img(5, 4, 1);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t(i);
  const ImageU8 c = center_crop(img, 2, 2); // left round(1.5)=2, top 1
  CHECK(std::vector<int>(c.pixels.begin(), c.pixels.end()) == std::vector<int>{7, 8, 12, 13});
  CHECK_THROWS(center_crop(img, 6, 2));
}

TEST_CASE("normalize: planar output, float32 arithmetic like torchvision") {
  ImageU8 img(2, 1, 3);
  img.pixels = {0, 128, 255, 10, 20, 30};
  const std::vector<float> mean{0.485f, 0.456f, 0.406f}, std{0.229f, 0.224f, 0.225f};
  const std::vector<float> x = normalize(img, mean, std);
  REQUIRE(x.size() == 6);
  // channel-major: R of both pixels, then G, then B
  CHECK(x[0] == (0.0f / 255.0f - mean[0]) / std[0]);
  CHECK(x[1] == (10.0f / 255.0f - mean[0]) / std[0]);
  CHECK(x[2] == (128.0f / 255.0f - mean[1]) / std[1]);
  CHECK(x[5] == (30.0f / 255.0f - mean[2]) / std[2]);
  CHECK_THROWS(normalize(img, {0.5f}, {0.5f}));
}

TEST_CASE("spec: FORMAT.md's preprocess object parses; bad ones are refused") {
  const PreprocessSpec s = PreprocessSpec::from_json(
      R"({"input_size": 384, "resize": 384, "crop": 384, "interpolation": "bicubic",
          "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.5, 1], "channels": 3})");
  CHECK(s.resize == 384);
  CHECK(s.crop == 384);
  CHECK(s.std[0] == 0.25f);
  const PreprocessSpec d = PreprocessSpec::from_json("{}");
  CHECK(d.resize == 256);
  CHECK(d.crop == 224);

  for (const char *bad : {"not json", "[1]", R"({"resize": 200})", R"({"crop": 200})", R"({"channels": 2})",
                          R"({"channels": 1})", R"({"interpolation": "bilinear"})", R"({"std": [1, 0, 1]})",
                          R"({"mean": [0, 0]})", R"({"resize": 100000, "crop": 224})", R"({"resize": "256"})"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(PreprocessSpec::from_json(bad), pola::InputError);
  }
  CHECK_NOTHROW(PreprocessSpec::from_json(R"({"channels": 1, "mean": [0.5], "std": [0.5]})"));
}

TEST_CASE("load_and_preprocess: a constant image gives constant planes of the normalized value") {
  const std::string path = pola::test::temp_path("const.bmp");
  pola::test::Bytes rgb;
  for (int i = 0; i < 300 * 170; ++i) rgb.insert(rgb.end(), {200, 100, 0});
  pola::test::write_file(path, pola::test::encode_bmp_rgb(300, 170, rgb));
  const PreprocessSpec spec;
  const std::vector<float> x = load_and_preprocess(path, spec);
  REQUIRE(x.size() == size_t(3 * 224 * 224));
  const float want[3] = {(200.0f / 255.0f - spec.mean[0]) / spec.std[0], (100.0f / 255.0f - spec.mean[1]) / spec.std[1],
                         (0.0f / 255.0f - spec.mean[2]) / spec.std[2]};
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 224 * 224; i += 97) CHECK(x[size_t(c) * 224 * 224 + i] == want[c]);
  std::remove(path.c_str());
}
