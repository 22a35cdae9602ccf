// The engine's WeightStore on int8 files (FORMAT.md, "I8 tensors"): float
// getters dequantize, get_int8 hands out the stored bytes, activation scales
// are found or absent, and a float run of an int8 file uses every tensor.
#include <doctest/doctest.h>

#include <stdexcept>

#include "engine/weight_store.h"
#include "test_util.h"
#include "weights/error.h"
#include "weights/model_file.h"

using pola::InputError;
using pola::QuantizedWeight;
using pola::StoredWeight;
using pola::WeightStore;
using pola::test::ScratchFile;
using namespace pola::weights;

namespace {

// "a.weight" (I8, 3 x 2 x 2: rows of 4) with its scales and `input_scale`
// (none when empty), "a.bias" (F32) and "n.weight" (F32, rank 1, no scales).
struct Int8File {
  ScratchFile file;
  std::vector<int8_t> q = {-128, -1, 0, 127, 1, 2, 3, 4, -7, 9, 100, -100};
  std::vector<float> scale = {0.5f, 1e-3f, 0.0078125f};
  std::vector<float> bias = {1, 2, 3};
  std::vector<float> norm = {4, 5};

  explicit Int8File(std::vector<float> input_scale = {0.02f}, std::vector<int64_t> input_scale_shape = {1}) {
    std::vector<TensorToWrite> t = {{"a.weight", {3, 2, 2}, nullptr, StoredDtype::i8, q.data()},
                                    {"a.weight_scale", {3}, scale.data()},
                                    {"a.bias", {3}, bias.data()},
                                    {"n.weight", {2}, norm.data()}};
    if (!input_scale.empty()) t.push_back({"a.input_scale", input_scale_shape, input_scale.data()});
    write_model_file(file.path(), {{"format", "polaformer"}}, t);
  }
  // (WeightStore holds a mutex: returned by guaranteed copy elision.)
  WeightStore store() const { return WeightStore(ModelFile::open(file.path())); }
};

} // namespace

TEST_CASE("WeightStore: get and get_stored of an I8 tensor dequantize exactly q * scale[row]") {
  Int8File f;
  WeightStore ws = f.store();
  const float *w = ws.get("a.weight", {3, 2, 2});
  REQUIRE(w);
  for (size_t i = 0; i < f.q.size(); ++i) {
    CAPTURE(i);
    CHECK(w[i] == static_cast<float>(f.q[i]) * f.scale[i / 4]);
  }
  // Made once and kept: the same pointer again, and get_stored hands it out as F32.
  CHECK(ws.get("a.weight", {3, 2, 2}) == w);
  const StoredWeight s = ws.get_stored("a.weight", {3, 2, 2});
  CHECK(s.dtype == StoredDtype::f32);
  CHECK(s.data == w);
  CHECK(ws.stored_int8("a.weight"));
  CHECK_FALSE(ws.stored_int8("a.bias"));
  CHECK_FALSE(ws.stored_int8("absent"));
  // Shape and presence are checked as for any tensor.
  CHECK_THROWS_WITH_AS(ws.get("a.weight", {3, 4}), doctest::Contains("has shape (3, 2, 2), the config implies (3, 4)"),
                       InputError);
}

TEST_CASE("WeightStore: get_int8 returns the stored bytes and scales") {
  Int8File f;
  WeightStore ws = f.store();
  const QuantizedWeight qw = ws.get_int8("a.weight", {3, 2, 2});
  REQUIRE(qw.q);
  REQUIRE(qw.scale);
  CHECK(qw.q == ws.file().find("a.weight")->bytes);  // the mapping itself, not a copy
  for (size_t i = 0; i < f.q.size(); ++i) CHECK(qw.q[i] == f.q[i]);
  for (size_t r = 0; r < f.scale.size(); ++r) CHECK(qw.scale[r] == f.scale[r]);
  CHECK_THROWS_WITH_AS(ws.get_int8("a.bias", {3}), doctest::Contains((f.file.path() + ": tensor 'a.bias' is stored as F32, not I8").c_str()),
                       InputError);
  CHECK_THROWS_WITH_AS(ws.get_int8("a.weight", {12}), doctest::Contains((f.file.path() + ": tensor 'a.weight' has shape").c_str()),
                       InputError);
  CHECK_THROWS_WITH_AS(ws.get_int8("b.weight", {1}), doctest::Contains((f.file.path() + ": missing tensor 'b.weight'").c_str()),
                       InputError);
  // An int8 run reads the weight, its scales and its input scale: nothing is left unused.
  ws.input_scale("a.weight");
  ws.get("a.bias", {3});
  ws.get("n.weight", {2});
  CHECK_NOTHROW(ws.check_all_used());
}

TEST_CASE("WeightStore: input_scale found, absent, or refused") {
  {
    Int8File f;
    WeightStore ws = f.store();
    const float *s = ws.input_scale("a.weight");
    REQUIRE(s);
    CHECK(*s == 0.02f);
    CHECK(ws.input_scale("n.weight") == nullptr); // no n.input_scale in the file
    CHECK_THROWS_AS(ws.input_scale("a.bias"), std::invalid_argument);
  }
  {
    Int8File f(std::vector<float>{});  // no input scale
    WeightStore ws = f.store();
    CHECK(ws.input_scale("a.weight") == nullptr);
  }
  for (const std::vector<float> &bad : {std::vector<float>{0.0f}, std::vector<float>{-0.5f}}) {
    Int8File f(bad);
    WeightStore ws = f.store();
    CHECK_THROWS_WITH_AS(ws.input_scale("a.weight"),
                         doctest::Contains((f.file.path() + ": tensor 'a.input_scale' is " +
                                           (bad[0] == 0.0f ? "0" : "-0.5") + "; an activation scale must be finite and > 0").c_str()),
                         InputError);
  }
  {
    Int8File f({0.5f, 0.25f}, {2});
    WeightStore ws = f.store();
    CHECK_THROWS_WITH_AS(ws.input_scale("a.weight"),
                         doctest::Contains((f.file.path() + ": tensor 'a.input_scale' is F32 of shape (2)").c_str()), InputError);
  }
}

TEST_CASE("WeightStore: a float run of an int8 file uses every tensor") {
  Int8File f;
  WeightStore ws = f.store();
  // What a float build reads: the weights as floats, never the activation scales.
  ws.get("a.weight", {3, 2, 2});
  ws.get("a.bias", {3});
  ws.get("n.weight", {2});
  CHECK_NOTHROW(ws.check_all_used());
  // The same through get_stored (the packed GEMM weights' path).
  Int8File g;
  WeightStore ws2 = g.store();
  ws2.get_stored("a.weight", {3, 2, 2});
  ws2.get_stored("a.bias", {3});
  ws2.get_stored("n.weight", {2});
  CHECK_NOTHROW(ws2.check_all_used());
  // Leaving the weight out leaves it, its scales and its input scale unused.
  Int8File h;
  WeightStore ws3 = h.store();
  ws3.get("a.bias", {3});
  ws3.get("n.weight", {2});
  CHECK_THROWS_WITH_AS(ws3.check_all_used(), doctest::Contains("3 unexpected tensor(s)"), InputError);
}
