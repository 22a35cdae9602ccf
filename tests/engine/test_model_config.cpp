// The config parser refuses malformed configs with messages naming the file.
#include <doctest/doctest.h>

#include <string>

#include "engine/model_config.h"
#include "weights/error.h"

using namespace pola;

namespace {
const char *kPvtTiny = R"({"family":"pvt","img_size":224,"in_chans":3,"num_classes":1000,
  "embed_dims":[64,128,320,512],"depths":[2,2,2,2],"num_heads":[1,2,5,8],"mlp_ratios":[8,8,4,4],
  "attn_types":["L","L","L","L"],"alpha":4,"kernel_size":5,"patch_sizes":[4,2,2,2],"sr_ratios":[1,1,1,1]})";

std::string error_of(const std::string &json) {
  try {
    parse_model_config(json, "", "m.pola");
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

TEST_CASE("pola_pvt_tiny parses with the expected geometry") {
  ModelConfig c = parse_model_config(kPvtTiny, "pola_pvt_tiny", "m.pola");
  CHECK(c.family == Family::pvt);
  REQUIRE(c.stages.size() == 4);
  CHECK(c.stages[2].heads == 5);
  CHECK(stage_resolutions(c) == std::vector<int>{56, 28, 14, 7});
}

TEST_CASE("malformed configs are refused with the file named") {
  CHECK(error_of("not json").find("m.pola") == 0);
  CHECK(error_of(replace(kPvtTiny, "\"pvt\"", "\"vit\"")).find("m.pola: ") == 0);
  CHECK(error_of(replace(kPvtTiny, "[1,2,5,8]", "[1,2,7,8]")).find("not divisible") != std::string::npos);
  CHECK(error_of(replace(kPvtTiny, "[2,2,2,2]", "[2,2,2]")).find("embed_dims") != std::string::npos);
  CHECK(error_of(replace(kPvtTiny, "\"img_size\":224", "\"img_size\":-5")).find("img_size") != std::string::npos);
  CHECK(error_of(replace(kPvtTiny, "\"img_size\":224", "\"img_size\":8")).find("img_size") != std::string::npos);
  CHECK(error_of(replace(kPvtTiny, "\"L\",\"L\",\"L\",\"L\"", "\"L\",\"X\",\"L\",\"L\"")).find("attn_types") !=
        std::string::npos);
}
