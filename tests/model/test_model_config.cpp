// The config's JSON form: malformed configs are refused with messages naming
// the file; configs dump to the bytes model files hold; presets are named.
#include <doctest/doctest.h>

#include <string>

#include "model/config_json.h"
#include "model/error.h"
#include "model/presets.h"

using namespace pola;

namespace {
const char *kPvtTiny = R"({"family":"pvt","img_size":224,"in_chans":3,"num_classes":1000,
  "embed_dims":[64,128,320,512],"depths":[2,2,2,2],"num_heads":[1,2,5,8],"mlp_ratios":[8,8,4,4],
  "attn_types":["L","L","L","L"],"alpha":4,"kernel_size":5,"patch_sizes":[4,2,2,2],"sr_ratios":[1,1,1,1]})";

ModelConfig parse(const std::string &json) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded()) throw InputError("m.pola: not JSON");
  return config_from_json(j, "m.pola");
}

std::string error_of(const std::string &json) {
  try {
    parse(json);
  } catch (const InputError &e) {
    return e.what();
  }
  return "";
}

std::string replace(std::string s, const std::string &a, const std::string &b) {
  auto p = s.find(a);
  REQUIRE(p != std::string::npos);
  return s.replace(p, a.size(), b);
}
} // namespace

TEST_CASE("pola_pvt_tiny parses into per-stage values") {
  ModelConfig c = parse(kPvtTiny);
  CHECK(c.family == Family::pvt);
  REQUIRE(c.stages.size() == 4);
  CHECK(c.stages[2].heads == 5);
  CHECK(c.stages[0].patch == 4);
  CHECK(c.stages[1].mlp_ratio == 8);
  CHECK(arch_name(c) == "pola_pvt_tiny");
}

TEST_CASE("malformed configs are refused with the file named") {
  CHECK(error_of(replace(kPvtTiny, "\"pvt\"", "\"vit\"")) == "m.pola: config family 'vit' is not pvt, swin or pp");
  CHECK(error_of(replace(kPvtTiny, "[1,2,5,8]", "[1,2,7,8]")).find("not divisible") != std::string::npos);
  CHECK(error_of(replace(kPvtTiny, "[2,2,2,2]", "[2,2,2]")).find("embed_dims") != std::string::npos);
  CHECK(error_of(replace(kPvtTiny, "[4,2,2,2]", "[4,2,2]")) ==
        "m.pola: config patch_sizes / sr_ratios length differs from depths");
  CHECK(error_of(replace(kPvtTiny, "\"img_size\":224", "\"img_size\":-5")).find("img_size") != std::string::npos);
  CHECK(error_of(replace(kPvtTiny, "\"img_size\":224", "\"img_size\":8")).find("img_size") != std::string::npos);
  CHECK(error_of(replace(kPvtTiny, "\"img_size\":224", "\"img_size\":16.5")) ==
        "m.pola: config 'img_size' is not an integer");
  CHECK(error_of(replace(kPvtTiny, "\"L\",\"L\",\"L\",\"L\"", "\"L\",\"X\",\"L\",\"L\"")) ==
        "m.pola: config attn_types of stage 2 is not L or S");
  CHECK(error_of(replace(kPvtTiny, "\"L\",\"L\",\"L\",\"L\"", "\"L\",\"S\",\"L\",\"L\"")) ==
        "m.pola: PVT stages use L attention only");
  CHECK(error_of(replace(kPvtTiny, "\"sr_ratios\":[1,1,1,1]", "\"sr_ratios\":[1,1,1,8]")) ==
        "m.pola: config sr_ratio of stage 4 exceeds its resolution");
}

TEST_CASE("the JSON form is the model file's: sorted keys, whole numbers as integers, family keys only") {
  // The bytes `pola convert` has always written for pola_pvt_tiny and pola_swin_b_384.
  CHECK(config_to_json(*find_preset("pola_pvt_tiny")).dump() ==
        R"({"alpha":4,"attn_types":["L","L","L","L"],"depths":[2,2,2,2],"embed_dims":[64,128,320,512],)"
        R"("family":"pvt","img_size":224,"in_chans":3,"kernel_size":5,"mlp_ratios":[8,8,4,4],"num_classes":1000,)"
        R"("num_heads":[1,2,5,8],"patch_sizes":[4,2,2,2],"sr_ratios":[1,1,1,1]})");
  CHECK(config_to_json(*find_preset("pola_swin_b_384")).dump() ==
        R"({"alpha":4,"attn_types":["L","L","S","S"],"depths":[2,2,18,2],"embed_dims":[128,256,512,1024],)"
        R"("family":"swin","img_size":384,"in_chans":3,"kernel_size":5,"mlp_ratios":[4,4,4,4],"num_classes":1000,)"
        R"("num_heads":[4,8,16,32],"patch_size":4,"window_size":96,"window_size_softmax":12})");
  // PolaFormer++: its one key of its own is the head width (SPEC-polaformerpp 2.9).
  CHECK(config_to_json(*find_preset("pola_pp_b5")).dump() ==
        R"({"alpha":4,"attn_types":["L","L","S","S"],"depths":[4,7,19,8],"embed_dims":[96,192,448,640],)"
        R"("family":"pp","img_size":224,"in_chans":3,"kernel_size":5,"mlp_ratios":[3.5,3.5,3.5,3.5],)"
        R"("num_classes":1000,"num_heads":[1,2,7,10],"projection":2560})");
  ModelConfig c = parse(replace(kPvtTiny, "[8,8,4,4]", "[8,1.5,4,4]"));
  CHECK(config_to_json(c)["mlp_ratios"].dump() == "[8,1.5,4,4]");
  for (const auto &p : presets()) {
    CAPTURE(p.first);
    CHECK(p.second.arch == p.first);
    const ModelConfig back = config_from_json(config_to_json(p.second), "t");
    CHECK(config_differences(p.second, back).empty());
    CHECK(arch_name(back) == p.first);
  }
}

TEST_CASE("PolaFormer++ configs: its own checks") {
  const std::string b0 = config_to_json(*find_preset("pola_pp_b0")).dump();
  CHECK(parse(b0).family == Family::pp);
  CHECK(arch_name(parse(b0)) == "pola_pp_b0");
  // Head dims must be multiples of 4 (2-D RoPE): 64 / 32 heads = 2 is not.
  CHECK(error_of(replace(b0, "[1,2,4,12]", "[1,32,4,12]")) ==
        "m.pola: PolaPP head dim of stage 2 (2) must be divisible by 4 for its 2-D RoPE");
  // The stem is C1 / 2 wide (an odd C1 otherwise fails the whole-hidden-size check at MLP ratio 3.5,
  // and the even polarity head dim check in an L stage).
  const std::string odd = replace(replace(b0, "[32,64,128,384]", "[33,64,128,384]"), "[3.5,3.5,3.5,3.5]", "[4,4,4,4]");
  CHECK(error_of(replace(odd, "[\"L\",\"L\",", "[\"S\",\"L\",")) ==
        "m.pola: PolaPP's stem width is embed_dims[0] / 2: embed_dims of stage 1 must be even");
  CHECK(error_of(replace(b0, "\"projection\":2048", "\"projection\":0")) ==
        "m.pola: config projection = 0 is out of range");
  CHECK(error_of(replace(b0, ",\"projection\":2048", "")) == "m.pola: config has no 'projection'");
  CHECK(error_of(replace(b0, "[2,2,2,2]", "[2,2,2]")).find("embed_dims") != std::string::npos);
  // A softmax stage attends over the whole stage: a huge img_size is refused, not overflowed.
  CHECK(error_of(replace(b0, "\"img_size\":224", "\"img_size\":65536")).find("attends globally") !=
        std::string::npos);
}
