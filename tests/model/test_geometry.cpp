// The geometry a config implies, the one place the window / shift rule and
// the token grids are derived; and the polarity parameter transforms.
#include <doctest/doctest.h>

#include <cmath>

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
