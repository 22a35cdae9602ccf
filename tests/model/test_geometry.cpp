// The geometry a config implies, the one place the window / shift rule and
// the token grids are derived; and the polarity parameter transforms.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "model/error.h"
#include "model/geometry.h"
#include "model/polarity_params.h"
#include "model/presets.h"
#include "model/tensor_list.h"

using namespace pola;

TEST_CASE("PVT: resolutions from the patch sizes; keys on the spatially reduced grid") {
  ModelConfig c = *find_preset("pola_pvt_tiny");
  c.stages[1].sr_ratio = 2;
  c.stages[2].sr_ratio = 3; // 14 / 3: the conv drops the remainder
  const ModelGeometry g = model_geometry(c);
  REQUIRE(g.stages.size() == 4);
  const int64_t res[] = {56, 28, 14, 7}, in_side[] = {224, 56, 28, 14}, in_ch[] = {3, 64, 128, 320};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(g.stages[i].res_h == res[i]);
    CHECK(g.stages[i].res_w == res[i]);
    CHECK(g.stages[i].tokens == res[i] * res[i]);
    CHECK(g.stages[i].in_h == in_side[i]);
    CHECK(g.stages[i].in_channels == in_ch[i]);
    CHECK(g.stages[i].blocks.size() == 2);
  }
  const BlockGeometry &b1 = g.stages[1].blocks[1];
  CHECK(b1.window_h == 28);
  CHECK(b1.shift == 0);
  CHECK(b1.windows == 1);
  CHECK(b1.kv_h == 14);
  CHECK(b1.kv_tokens == 196);
  CHECK(b1.pos_enc_rows == 196);
  CHECK_FALSE(b1.partitioned);
  CHECK(g.stages[2].blocks[0].kv_w == 4);
}

TEST_CASE("Swin: a stage that fits in its window attends globally; otherwise odd blocks shift by half") {
  const ModelGeometry g = model_geometry(*find_preset("pola_swin_t")); // windows 56 (L) and 7 (S)
  // Stage 0 (56, L): one window of the whole stage, no shift, no mask.
  for (const BlockGeometry &b : g.stages[0].blocks) {
    CHECK(b.window_h == 56);
    CHECK(b.shift == 0);
    CHECK(b.windows == 1);
    CHECK(b.pos_enc_rows == 56 * 56);
    CHECK_FALSE(b.partitioned);
    CHECK_FALSE(b.has_attn_mask);
  }
  // Stage 1 (28, L): the 56 window is clipped to 28.
  CHECK(g.stages[1].blocks[1].window_h == 28);
  CHECK(g.stages[1].blocks[1].shift == 0);
  // Stage 2 (14, S, window 7): four windows, odd blocks shifted by 3 and masked.
  REQUIRE(g.stages[2].blocks.size() == 6);
  for (size_t j = 0; j < 6; ++j) {
    const BlockGeometry &b = g.stages[2].blocks[j];
    CHECK(b.window_h == 7);
    CHECK(b.windows == 4);
    CHECK(b.window_tokens == 49);
    CHECK(b.shift == (j % 2 ? 3 : 0));
    CHECK(b.has_attn_mask == (j % 2 == 1));
    CHECK(b.partitioned);
    CHECK(b.pos_enc_rows == 0); // softmax blocks have no positional encoding
  }
  // Stage 3 (7, S): fits its window, so no shift even for odd blocks.
  CHECK(g.stages[3].blocks[1].window_w == 7);
  CHECK(g.stages[3].blocks[1].shift == 0);
  CHECK_FALSE(g.stages[3].blocks[1].has_attn_mask);
  CHECK(g.stages[3].in_channels == 384);
  CHECK(g.stages[3].patch == 2);
}

TEST_CASE("the tensor list follows the geometry: masks exactly on shifted blocks") {
  const auto specs = expected_tensors(*find_preset("pola_swin_t"));
  int masks = 0;
  for (const auto &t : specs)
    if (t.name.find("attn_mask") != std::string::npos) {
      ++masks;
      CHECK(t.shape == std::vector<int64_t>{4, 49, 49});
      CHECK(t.use == TensorSpec::Use::Dropped);
    }
  CHECK(masks == 3); // layers.2.blocks.{1,3,5}
}

TEST_CASE("polarity parameter transforms (SPEC 3, step 3)") {
  CHECK(polarity_exponent(4, 0) == 3.0);
  CHECK(polarity_exponent(4, -50) == doctest::Approx(1.0));
  CHECK(polarity_exponent(4, 50) == doctest::Approx(5.0));
  CHECK(inverse_softplus(0) == doctest::Approx(1.0 / std::log(2.0)));
  CHECK(inverse_softplus(100) == 1.0 / 100); // large scales: softplus(x) = x, no overflow
}

TEST_CASE("geometry at another input size: PVT grids follow H and W; the checkpoint size is the default") {
  const ModelConfig c = *find_preset("pola_pvt_tiny");
  const ModelGeometry g = model_geometry(c, 256, 320);
  CHECK(g.height == 256);
  CHECK(g.width == 320);
  const int64_t h[] = {64, 32, 16, 8}, w[] = {80, 40, 20, 10};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(g.stages[i].res_h == h[i]);
    CHECK(g.stages[i].res_w == w[i]);
    CHECK(g.stages[i].tokens == h[i] * w[i]);
    CHECK(g.stages[i].blocks[0].pos_enc_rows == h[i] * w[i]);
  }
  const ModelGeometry native = model_geometry(c), same = model_geometry(c, 224, 224);
  for (size_t i = 0; i < 4; ++i) CHECK(native.stages[i].tokens == same.stages[i].tokens);
}

TEST_CASE("Swin at another size: stages padded to the stored window, or one rectangular window") {
  const ModelConfig c = *find_preset("pola_swin_t"); // stored windows 56, 28 (clipped), 7, 7
  const ModelGeometry g = model_geometry(c, 256, 320);
  // Stage 1: 64 x 80 > 56: padded to 112 x 112, four 56-windows, odd blocks shifted by 28.
  const BlockGeometry &s0 = g.stages[0].blocks[1];
  CHECK(s0.window_h == 56);
  CHECK(s0.padded_h == 112);
  CHECK(s0.padded_w == 112);
  CHECK(s0.windows == 4);
  CHECK(s0.shift == 28);
  CHECK(s0.partitioned);
  CHECK(g.stages[0].blocks[0].shift == 0);
  // Stage 2 keeps the window its positional encoding was made for (28), not the configured 56.
  CHECK(g.stages[1].blocks[0].window_h == 28);
  CHECK(g.stages[1].blocks[0].padded_w == 56);
  CHECK(g.stages[1].blocks[0].pos_enc_rows == 28 * 28);
  // Stage 3 (S, 16 x 20): padded to 21 x 21, nine 7-windows.
  CHECK(g.stages[2].blocks[1].windows == 9);
  CHECK(g.stages[2].blocks[1].shift == 3);
  // 192 x 160: stage 1 (48 x 40) fits one window: a 48 x 40 rectangle, no shift, no padding.
  const ModelGeometry small = model_geometry(c, 192, 160);
  const BlockGeometry &fit = small.stages[0].blocks[1];
  CHECK(fit.window_h == 48);
  CHECK(fit.window_w == 40);
  CHECK(fit.shift == 0);
  CHECK(fit.windows == 1);
  CHECK(fit.pos_enc_rows == 48 * 40);
  CHECK_FALSE(fit.partitioned);
}

TEST_CASE("check_input_size names the nearest valid sizes") {
  const ModelConfig c = *find_preset("pola_pvt_tiny");
  CHECK(input_size_multiple(c) == 32);
  CHECK(padded_input_side(c, 250) == 256);
  CHECK_NOTHROW(check_input_size(c, 256, 320, "x.npy"));
  try {
    check_input_size(c, 250, 300, "x.npy");
    FAIL("250x300 accepted");
  } catch (const InputError &e) {
    const std::string m = e.what();
    CHECK(m.find("x.npy: input size 250x300") == 0);
    CHECK(m.find("height 224 or 256") != std::string::npos);
    CHECK(m.find("width 288 or 320") != std::string::npos);
    CHECK(m.find("pad") == std::string::npos);  // this layer knows no tool option
  }
  try {
    check_input_size(c, 250, 300, "x.npy", "or pad it with --pad");
    FAIL("250x300 accepted");
  } catch (const InputError &e) {
    const std::string m = e.what();
    CHECK(m.substr(m.size() - 22) == "(or pad it with --pad)");
  }
  CHECK_THROWS_AS(check_input_size(c, 0, 224, "x"), InputError);
  CHECK_THROWS_AS(check_input_size(c, 224, kMaxInputSide + 32, "x"), InputError);
  ModelConfig sr = c;
  sr.stages[3].sr_ratio = 2; // stage 4 of a 32 x 32 input is 1 x 1: smaller than its reduction
  CHECK_THROWS_AS(check_input_size(sr, 32, 64, "x"), InputError);
  CHECK_NOTHROW(check_input_size(sr, 64, 64, "x"));
}

TEST_CASE("PolaFormer++: every stride-2 conv rounds up, any input size runs, each stage is one window") {
  const ModelConfig &c = *find_preset("pola_pp_b0");
  CHECK(input_size_multiple(c) == 1);
  CHECK_NOTHROW(check_input_size(c, 77, 50, "t"));
  // 77 x 50 -> stem 39 x 25 -> 20 x 13, then 10 x 7, 5 x 4, 3 x 2 (SPEC-polaformerpp T9).
  const ModelGeometry g = model_geometry(c, 77, 50);
  const int64_t want[4][2] = {{20, 13}, {10, 7}, {5, 4}, {3, 2}};
  REQUIRE(g.stages.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(g.stages[i].res_h == want[i][0]);
    CHECK(g.stages[i].res_w == want[i][1]);
    REQUIRE(g.stages[i].blocks.size() == static_cast<size_t>(c.stages[i].depth));
    const BlockGeometry &b = g.stages[i].blocks.back();
    CHECK(b.windows == 1);
    CHECK(b.window_tokens == g.stages[i].tokens);
    CHECK(b.kv_tokens == g.stages[i].tokens);
    CHECK_FALSE(b.partitioned);
  }
  // At its own size: 56, 28, 14, 7.
  const ModelGeometry own = model_geometry(c);
  CHECK(own.stages[0].tokens == 56 * 56);
  CHECK(own.stages[3].tokens == 7 * 7);
}
