// Model file reader/writer: round trip, and a table of broken files that must
// each end in InputError (never a crash, never a huge allocation).
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "test_util.h"
#include "weights/error.h"
#include "weights/model_file.h"

using pola::InputError;
using pola::test::le64;
using pola::test::ScratchFile;
using namespace pola::weights;

namespace {

// A small valid model file, written by our writer.
std::string valid_file_bytes() {
  ScratchFile f;
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  std::vector<float> b = {-1.5f};
  write_model_file(f.path(), {{"format", "polaformer"}, {"format_version", "1"}},
                   {{"w.weight", {2, 3}, a.data()}, {"s", {1}, b.data()}, {"empty", {0, 4}, nullptr}});
  return f.read();
}

// Safetensors bytes from a header text and a data area.
std::string st_file(const std::string &header, const std::string &data) { return le64(header.size()) + header + data; }

void expect_refused(const std::string &bytes, const char *what_contains = nullptr) {
  ScratchFile f;
  f.write(bytes);
  try {
    ModelFile::open(f.path());
    FAIL("accepted a bad file: " << bytes.substr(0, 200));
  } catch (const InputError &e) {
    std::string msg = e.what();
    CHECK(msg.find(f.path()) != std::string::npos); // names the file
    if (what_contains) CHECK_MESSAGE(msg.find(what_contains) != std::string::npos, msg);
  }
}

} // namespace

TEST_CASE("model file round trip") {
  ScratchFile f;
  std::vector<float> a(3 * 5);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * static_cast<float>(i) - 1.0f;
  std::vector<float> b = {42.0f};
  std::map<std::string, std::string> md = {{"format", "polaformer"}, {"config", "{\"x\": 1}"}};
  write_model_file(f.path(), md, {{"layers.0.w", {3, 5}, a.data()}, {"scalar", {}, b.data()}, {"z", {0}, nullptr}});

  std::string bytes = f.read();
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
  CHECK(bytes.size() == 8 + n + (15 + 1) * 4);

  ModelFile m = ModelFile::open(f.path());
  CHECK(m.file_size() == bytes.size());
  // The writer adds the checksums of format version 2 to the caller's metadata.
  for (const auto &kv : md) CHECK(m.metadata_at(kv.first) == kv.second);
  CHECK(m.has_checksums());
  CHECK(m.metadata().size() == md.size() + 3);
  CHECK(m.metadata_at("checksum_algorithm") == "xxh3_64");
  CHECK(m.metadata_at("format") == "polaformer");
  CHECK_THROWS_AS(m.metadata_at("nope"), InputError);
  REQUIRE(m.tensors().size() == 3);
  const TensorView *t = m.find("layers.0.w");
  REQUIRE(t);
  CHECK(t->shape == std::vector<int64_t>{3, 5});
  CHECK(t->numel == 15);
  CHECK(std::memcmp(t->data, a.data(), a.size() * 4) == 0);
  const TensorView *s = m.find("scalar");
  REQUIRE(s);
  CHECK(s->shape.empty());
  CHECK(s->numel == 1);
  CHECK(s->data[0] == 42.0f);
  CHECK(m.find("z")->numel == 0);
  CHECK(m.find("missing") == nullptr);

  // Moving keeps the mapping valid.
  ModelFile moved = std::move(m);
  CHECK(moved.find("scalar")->data[0] == 42.0f);
}

TEST_CASE("BF16 tensors: written rounded to nearest even, read back, F32 kept aligned") {
  ScratchFile f;
  // 1 + 2^-8 lies halfway between two bf16 values: ties go to the even one (1.0);
  // 1 + 3 * 2^-8 goes up to 1 + 2^-6 (even); 1 + 2^-8 + 2^-20 is above the tie.
  const float tie_down = 1.0f + 1.0f / 256, tie_up = 1.0f + 3.0f / 256, above = 1.0f + 1.0f / 256 + 1.0f / (1 << 20);
  std::vector<float> w = {tie_down, tie_up, above, -2.5f, 0.0f};  // odd count: the next offset is not a multiple of 4
  std::vector<float> b = {0.1f, 0.2f};
  TensorToWrite wt{"w.weight", {5}, w.data(), StoredDtype::bf16};
  TensorToWrite bt{"b", {2}, b.data()};
  write_model_file(f.path(), {{"format", "polaformer"}}, {wt, bt});
  const ModelFile mf = ModelFile::open(f.path());
  CHECK(mf.has_checksums());
  const TensorView *tw = mf.find("w.weight");
  const TensorView *tb = mf.find("b");
  REQUIRE(tw);
  REQUIRE(tb);
  CHECK(tw->dtype == StoredDtype::bf16);
  CHECK(tw->data == nullptr);
  CHECK(tw->byte_size() == 10);
  const std::vector<float> got = tensor_as_f32(*tw);
  CHECK(got == std::vector<float>{1.0f, 1.0f + 4.0f / 256, 1.0f + 2.0f / 256, -2.5f, 0.0f});
  CHECK(tb->dtype == StoredDtype::f32);
  CHECK(reinterpret_cast<uintptr_t>(tb->data) % 4 == 0);
  CHECK(tb->data[1] == 0.2f);
  // A value beyond the bf16 range rounds to Inf: refused, naming the tensor, and no file written.
  ScratchFile g;
  std::vector<float> huge = {3.4e38f};
  CHECK_THROWS_WITH_AS(write_model_file(g.path(), {}, {{"h", {1}, huge.data(), StoredDtype::bf16}}),
                       doctest::Contains("'h' cannot be stored as BF16"), InputError);
  // A NaN stored as BF16 is refused at load like an F32 one.
  std::string h = R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})";
  h += std::string((8 - (8 + h.size()) % 8) % 8, ' ');
  expect_refused(st_file(h, std::string("\x00\x00\xc0\x7f", 4)), "non-finite bf16");
}

TEST_CASE("writer refuses bad tensors and leaves no file behind") {
  ScratchFile f;
  float x = 1;
  CHECK_THROWS_AS(write_model_file(f.path(), {}, {{"a", {1}, &x}, {"a", {1}, &x}}), InputError);
  CHECK_THROWS_AS(write_model_file(f.path(), {}, {{"a", {-1}, &x}}), InputError);
  CHECK_THROWS_AS(write_model_file(f.path(), {}, {{"a", {2}, nullptr}}), InputError);
  CHECK_THROWS_AS(write_model_file(f.path(), {}, {{"__metadata__", {1}, &x}}), InputError);
  CHECK_FALSE(pola::test::file_exists(f.path()));
  CHECK_THROWS_AS(write_model_file("/nonexistent-dir/x.pola", {}, {{"a", {1}, &x}}), InputError);
}

TEST_CASE("bad model files end in InputError") {
  const std::string good = valid_file_bytes();
  SUBCASE("valid file opens") {
    ScratchFile f;
    f.write(good);
    CHECK_NOTHROW(ModelFile::open(f.path()));
  }
  SUBCASE("missing file") { CHECK_THROWS_AS(ModelFile::open("/nonexistent/file.pola"), InputError); }
  SUBCASE("directory") { CHECK_THROWS_AS(ModelFile::open("/tmp"), InputError); }
  SUBCASE("empty") { expect_refused("", "too small"); }
  SUBCASE("truncated at every offset") {
    for (size_t cut = 0; cut < good.size(); ++cut) {
      CAPTURE(cut);
      expect_refused(good.substr(0, cut));
    }
  }
  SUBCASE("random bytes") {
    std::mt19937 rng(1234);
    for (int i = 0; i < 200; ++i) {
      std::string s(rng() % 512, '\0');
      for (auto &c : s) c = static_cast<char>(rng());
      CAPTURE(i);
      expect_refused(s);
    }
  }
  SUBCASE("random bytes after a plausible header length") {
    std::mt19937 rng(99);
    for (int i = 0; i < 100; ++i) {
      std::string body(64, '\0');
      for (auto &c : body) c = static_cast<char>(rng());
      expect_refused(le64(40) + body);
    }
  }
  SUBCASE("header length beyond the file") { expect_refused(le64(1000) + "{}", "exceeds the file size"); }
  SUBCASE("header length near 2^64") { expect_refused(le64(~0ull) + "{}", "exceeds"); }
  SUBCASE("text is named as text") {
    expect_refused("T-shirt/top\nTrouser\nPullover\n", "this is a text file");
    expect_refused("Gr\xc3\xb6\xc3\x9f" "e in \xc2\xb5m\n\t12\n", "this is a text file");  // UTF-8
    expect_refused("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n", "Git LFS pointer");
    expect_refused("Gr\xf6\xdf" "e in \xb5m, Latin-1\n", "exceeds");  // not UTF-8: no claim about it
  }
  SUBCASE("header length over the cap") {
    // A sparse file larger than the cap, so only the cap can refuse it.
    ScratchFile f;
    {
      std::ofstream o(f.path(), std::ios::binary);
      std::string h = le64((100ull << 20) + 8);
      o.write(h.data(), 8);
      o.seekp((101ll << 20));
      o.put(' ');
    }
    CHECK_THROWS_WITH_AS(ModelFile::open(f.path()), doctest::Contains("limit"), InputError);
  }
  SUBCASE("header not JSON") { expect_refused(st_file("not json", ""), "not valid JSON"); }
  SUBCASE("header is an array") { expect_refused(st_file("[1, 2]  ", ""), "not a JSON object"); }
  SUBCASE("deep JSON nesting") {
    std::string h = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    expect_refused(st_file(h, ""), "nested");
  }
  SUBCASE("offsets outside the data area") {
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"), "data area");
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[1000000,1000004]}})", "1234"));
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551615]}})",
                           "1234"));
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", "1234"));
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "1234"), "begin > end");
  }
  SUBCASE("size does not match shape") {
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "12345678"), "elements");
  }
  SUBCASE("absurd shapes") {
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", "1234"),
                   "overflow");
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1073741824,1073741824,16],"data_offsets":[0,4]}})", "1234"));
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "1234"), "non-negative");
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "1234"));
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", "1234"));
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})",
                           "1234"),
                   "rank");
  }
  SUBCASE("wrong dtype") {
    expect_refused(st_file(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", "1234"), "F32, BF16 or I8");
    expect_refused(st_file(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", "12345678"), "F32, BF16 or I8");
    expect_refused(st_file(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,4]}})", "1234"), "unknown dtype");
    expect_refused(st_file(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", "1234"), "dtype");
  }
  SUBCASE("missing fields") {
    expect_refused(st_file(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", "1234"), "dtype");
    expect_refused(st_file(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", "1234"), "shape");
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1]}})", "1234"), "data_offsets");
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "1234"), "data_offsets");
    expect_refused(st_file(R"({"a":[1,2]})", "1234"), "not a JSON object");
  }
  SUBCASE("duplicate names") {
    expect_refused(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                           "1234"),
                   "more than once");
  }
  SUBCASE("bad metadata") {
    expect_refused(st_file(R"({"__metadata__":{"a":1}})", ""), "not a string");
    expect_refused(st_file(R"({"__metadata__":[1]})", ""), "__metadata__");
  }
  SUBCASE("misaligned data") {
    // Header of 9 bytes puts the data at offset 17: not float-aligned.
    std::string h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    h += std::string((8 - (8 + h.size()) % 8) % 8 + 1, ' ');
    expect_refused(st_file(h, "1234"), "aligned");
  }
}
