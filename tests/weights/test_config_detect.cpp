// Config detection from shapes: every preset and some custom layouts round-trip
// through expected_tensors() -> detect_config(); wrong layouts are refused.
#include <doctest/doctest.h>

#include "weights/config_detect.h"
#include "weights/error.h"
#include "model/presets.h"
#include "model/tensor_list.h"
#include "weights/tensor_check.h"

using namespace pola;
using namespace pola::weights;

namespace {

// Sets one per-stage value of every stage, e.g. per_stage(c, &StageConfig::dim, {24, 48, 96, 192}).
template <class T, class V>
void per_stage(ModelConfig &c, T StageConfig::*field, const std::vector<V> &values) {
  REQUIRE(values.size() == c.stages.size());
  for (size_t i = 0; i < values.size(); ++i) c.stages[i].*field = static_cast<T>(values[i]);
}

constexpr auto L = AttentionKind::polarity, S = AttentionKind::softmax_window;

ShapeMap shapes_of(const ModelConfig &c, bool with_buffers = true) {
  ShapeMap m;
  for (const auto &t : expected_tensors(c))
    if (with_buffers || t.use != TensorSpec::Use::Dropped) m[t.name] = t.shape;
  return m;
}

void round_trip(const ModelConfig &c, bool with_buffers = true) {
  ModelConfig d = detect_config(shapes_of(c, with_buffers), "test");
  auto diffs = config_differences(c, d);
  std::string all;
  for (const auto &x : diffs) all += x + "; ";
  CHECK_MESSAGE(diffs.empty(), all);
}

} // namespace

TEST_CASE("every preset is detected from its tensor shapes") {
  CHECK(presets().size() == 14); // PVT 4, Swin 4, PolaFormer++ b0-b5
  for (const auto &p : presets()) {
    CAPTURE(p.first);
    round_trip(p.second);
    round_trip(p.second, /*with_buffers=*/false);
    CHECK(arch_name(detect_config(shapes_of(p.second), "t")) == p.first);
  }
}

TEST_CASE("preset parameter counts match SPEC section 1") {
  auto params = [](const char *name) {
    int64_t n = 0;
    for (const auto &t : expected_tensors(*find_preset(name))) {
      if (t.use == TensorSpec::Use::Dropped) continue;
      int64_t e = 1;
      for (int64_t d : t.shape) e *= d;
      n += e;
    }
    return static_cast<double>(n) / 1e6;
  };
  // SPEC: 12.9 M, 23.2 M, 29.3 M, 50.6 M (PVT counts include the unused final norm).
  CHECK(params("pola_pvt_tiny") == doctest::Approx(12.9).epsilon(0.01));
  CHECK(params("pola_pvt_small") == doctest::Approx(23.2).epsilon(0.01));
  CHECK(params("pola_swin_t") == doctest::Approx(29.3).epsilon(0.01));
  CHECK(params("pola_swin_s") == doctest::Approx(50.6).epsilon(0.01));
}

TEST_CASE("custom layouts: windows, spatial reduction, odd patch sizes, mixed attention") {
  ModelConfig sw = *find_preset("pola_swin_t");
  per_stage<int64_t, int64_t>(sw, &StageConfig::dim, {24, 48, 96, 192});
  per_stage<int64_t, int64_t>(sw, &StageConfig::heads, {3, 2, 3, 4});
  per_stage<int64_t, int64_t>(sw, &StageConfig::depth, {2, 2, 2, 2});
  sw.img_size = 96;
  sw.window_size = 6;
  sw.window_size_softmax = 3;
  sw.num_classes = 23;
  round_trip(sw);
  per_stage<AttentionKind, AttentionKind>(sw, &StageConfig::attn, {S, L, L, S});
  sw.window_size = 4;
  sw.window_size_softmax = 4;
  sw.img_size = 64;
  round_trip(sw);

  ModelConfig pv = *find_preset("pola_pvt_tiny");
  pv.img_size = 72;
  per_stage<int64_t, int64_t>(pv, &StageConfig::dim, {32, 48, 96, 64});
  per_stage<int64_t, int64_t>(pv, &StageConfig::heads, {1, 3, 2, 2});
  per_stage<int64_t, int64_t>(pv, &StageConfig::patch, {4, 1, 1, 2});
  per_stage<int64_t, int64_t>(pv, &StageConfig::sr_ratio, {2, 3, 2, 1});
  per_stage<double, double>(pv, &StageConfig::mlp_ratio, {2, 1.5, 2, 2});
  pv.in_chans = 1;
  round_trip(pv);
}

TEST_CASE("non-PolaFormer layouts are refused") {
  CHECK_THROWS_AS(detect_config({}, "t"), InputError);
  CHECK_THROWS_WITH_AS(detect_config({{"conv1.weight", {64, 3, 7, 7}}, {"fc.weight", {1000, 512}}}, "t"),
                       "t: not a PolaFormer checkpoint: found none of 'patch_embed1.proj.weight' (PVT), "
                       "'patch_embed.proj.weight' (Swin) and 'patch_embed.proj.0.weight' (PolaPP); first tensors: "
                       "conv1.weight, fc.weight",
                       InputError);
  // Names of two families at once: refused, naming both.
  ShapeMap both = shapes_of(*find_preset("pola_pvt_tiny"));
  both["patch_embed.proj.weight"] = {96, 3, 4, 4};
  CHECK_THROWS_WITH_AS(detect_config(both, "t"), doctest::Contains("it has both PVT and Swin tensors"), InputError);
  // A plain Swin (softmax attention everywhere) is not PolaFormer.
  ModelConfig sw = *find_preset("pola_swin_t");
  per_stage<AttentionKind, AttentionKind>(sw, &StageConfig::attn, {S, S, S, S});
  CHECK_THROWS_WITH_AS(detect_config(shapes_of(sw), "t"), doctest::Contains("plain Swin"), InputError);
  // Missing detection inputs name the tensor.
  ShapeMap m = shapes_of(*find_preset("pola_pvt_tiny"));
  m.erase("block2.0.attn.power");
  CHECK_THROWS_WITH_AS(detect_config(m, "t"), doctest::Contains("block2.0.attn.power"), InputError);
}

// The titles of the detectors that claim a checkpoint's names.
std::vector<std::string> claimants(const ShapeMap &m) {
  const ShapeReader in(m, "t");
  std::vector<std::string> out;
  for (const FamilyDetector *d : family_detectors())
    if (d->claims(in)) out.push_back(d->title);
  return out;
}

TEST_CASE("PolaFormer++: only its own detector claims it, and the others' checkpoints are not its") {
  // Swin and PolaPP both name blocks "layers.i.blocks.j": the Swin claim must not rest on that.
  // Exactly one detector claims each preset (the round trip above shows it is the right one).
  for (const auto &p : presets()) {
    CAPTURE(p.first);
    const auto all = claimants(shapes_of(p.second)), params = claimants(shapes_of(p.second, false));
    CHECK(all.size() == 1);
    CHECK(params == all);
  }
  for (const char *name : {"pola_pp_b0", "pola_pp_b5"}) {
    CAPTURE(name);
    CHECK(claimants(shapes_of(*find_preset(name))) == std::vector<std::string>{"PolaPP"});
  }
  // A PolaPP checkpoint without its stem is still its own (its norm1.norm keys), and refused by name.
  ShapeMap m = shapes_of(*find_preset("pola_pp_b2"));
  m.erase("patch_embed.proj.0.weight");
  CHECK(claimants(m) == std::vector<std::string>{"PolaPP"});
  CHECK_THROWS_WITH_AS(detect_config(m, "t"), doctest::Contains("patch_embed.proj.0.weight"), InputError);
  // Softmax stages read their heads from the angle buffer they use; without it, the refusal names it.
  m = shapes_of(*find_preset("pola_pp_b2"));
  m.erase("layers.2.RoPE.angle");
  CHECK(config_differences(detect_config(m, "t"), *find_preset("pola_pp_b2")).empty()); // from RoPE_linear
  m.erase("layers.2.RoPE_linear.angle");
  CHECK_THROWS_WITH_AS(detect_config(m, "t"), doctest::Contains("layers.2.RoPE_linear.angle"), InputError);
  // Neither projection: the attention type is unknown.
  m = shapes_of(*find_preset("pola_pp_b0"));
  m.erase("layers.3.blocks.0.attn.qkvo.weight");
  CHECK_THROWS_WITH_AS(detect_config(m, "t"), doctest::Contains("attention type of stage 4"), InputError);
  // Custom layouts round-trip: other classes, head width, input channels, attention order, LePE kernel.
  ModelConfig c = *find_preset("pola_pp_b1");
  c.num_classes = 17;
  c.projection = 96;
  c.in_chans = 1;
  c.kernel_size = 3;
  per_stage<AttentionKind, AttentionKind>(c, &StageConfig::attn, {S, L, S, L});
  per_stage<int64_t, int64_t>(c, &StageConfig::heads, {2, 4, 12, 3});
  round_trip(c);
  round_trip(c, /*with_buffers=*/false);
}

TEST_CASE("PolaFormer++ parameter counts match SPEC-polaformerpp section 1") {
  const std::pair<const char *, int64_t> counted[] = {{"pola_pp_b0", 7548712},  {"pola_pp_b1", 9227496},
                                                      {"pola_pp_b2", 16450664}, {"pola_pp_b3", 27145896},
                                                      {"pola_pp_b4", 49798792}, {"pola_pp_b5", 97773000}};
  for (const auto &[name, want] : counted) {
    CAPTURE(name);
    // Learnable parameters: everything but the BN statistics and the angle buffers.
    int64_t n = 0;
    for (const auto &t : expected_tensors(*find_preset(name))) {
      const auto ends = [&](const std::string &suffix) {
        return t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      if (ends(".running_mean") || ends(".running_var") || ends(".num_batches_tracked") || ends(".angle")) continue;
      int64_t e = 1;
      for (int64_t d : t.shape) e *= d;
      n += e;
    }
    CHECK(n == want);
  }
}

TEST_CASE("tensor check lists missing, extra and mis-shaped tensors") {
  const ModelConfig &c = *find_preset("pola_swin_t");
  ShapeMap m = shapes_of(c);
  m.erase("head.bias");
  m["layers.0.blocks.0.attn.qkvg.weight"] = {384, 95};
  m["cls_token"] = {1, 1, 96};
  TensorCheck r = check_tensors(m, expected_tensors(c), true);
  REQUIRE(r.missing.size() == 1);
  REQUIRE(r.extra.size() == 1);
  REQUIRE(r.misshaped.size() == 1);
  std::string d = r.describe();
  CHECK(d.find("head.bias") != std::string::npos);
  CHECK(d.find("cls_token") != std::string::npos);
  CHECK(d.find("(384, 95), expected (384, 96)") != std::string::npos);
  // Model files must not carry the recomputable buffers.
  CHECK_FALSE(check_tensors(shapes_of(c), expected_tensors(c), false).ok());
}
