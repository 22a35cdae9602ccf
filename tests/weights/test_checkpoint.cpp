// Checkpoint containers: torch zip (built here by hand) and safetensors;
// strided and half-precision tensors; broken and hostile files.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "pickle_builder.h"
#include "test_util.h"
#include "weights/checkpoint.h"
#include "weights/converter.h"
#include "weights/error.h"
#include "zip_writer.h"

using pola::InputError;
using pola::test::floats_bytes;
using pola::test::PickleBuilder;
using pola::test::ScratchFile;
using pola::test::write_zip;
using namespace pola::weights;

namespace {

const char *kMarker = "/tmp/pola_checkpoint_marker_must_not_exist";

std::string one_tensor_pickle(const std::string &cls, int numel, int offset, std::initializer_list<int> size,
                              std::initializer_list<int> stride) {
  PickleBuilder p;
  p.proto().op('}').put(0).mark().str("w").tensor(cls, "0", numel, offset, size, stride).op('u').stop();
  return p.bytes();
}

void expect_refused(const std::string &path, const char *contains = nullptr) {
  try {
    auto ck = open_checkpoint(path);
    for (size_t i = 0; i < ck->tensors().size(); ++i) ck->read_f32(i);
    FAIL("accepted " << path);
  } catch (const InputError &e) {
    if (contains) CHECK_MESSAGE(std::string(e.what()).find(contains) != std::string::npos, std::string(e.what()));
  }
}

} // namespace

TEST_CASE("torch zip: contiguous, strided and half tensors") {
  ScratchFile f(".pth");
  const std::vector<float> data = {0, 1, 2, 3, 4, 5, 6};
  SUBCASE("contiguous with an offset") {
    write_zip(f.path(), {{"archive/data.pkl", one_tensor_pickle("FloatStorage", 7, 1, {2, 3}, {3, 1})},
                         {"archive/data/0", floats_bytes(data)},
                         {"archive/version", "3\n"}});
    auto ck = open_checkpoint(f.path());
    CHECK(ck->container() == "torch zip");
    REQUIRE(ck->tensors().size() == 1);
    CHECK(ck->tensors()[0].shape == std::vector<int64_t>{2, 3});
    CHECK(ck->read_f32(0) == std::vector<float>{1, 2, 3, 4, 5, 6});
  }
  SUBCASE("transposed view") {
    write_zip(f.path(), {{"m/data.pkl", one_tensor_pickle("FloatStorage", 7, 0, {3, 2}, {1, 3})},
                         {"m/data/0", floats_bytes(data)}});
    auto ck = open_checkpoint(f.path());
    CHECK(ck->read_f32(0) == std::vector<float>{0, 3, 1, 4, 2, 5});
  }
  SUBCASE("half and bfloat16 storages are widened") {
    const uint16_t halves[] = {0x3c00, 0xc000, 0x0001, 0x7bff}; // 1, -2, 2^-24, 65504
    write_zip(f.path(), {{"m/data.pkl", one_tensor_pickle("HalfStorage", 4, 0, {4}, {1})},
                         {"m/data/0", std::string(reinterpret_cast<const char *>(halves), 8)}});
    auto ck = open_checkpoint(f.path());
    CHECK(ck->tensors()[0].dtype == "F16");
    CHECK(ck->read_f32(0) == std::vector<float>{1.0f, -2.0f, 5.9604645e-08f, 65504.0f});
    const uint16_t bf[] = {0x3f80, 0xc040}; // 1, -3
    write_zip(f.path(), {{"m/data.pkl", one_tensor_pickle("BFloat16Storage", 2, 0, {2}, {1})},
                         {"m/data/0", std::string(reinterpret_cast<const char *>(bf), 4)}});
    CHECK(open_checkpoint(f.path())->read_f32(0) == std::vector<float>{1.0f, -3.0f});
  }
  SUBCASE("integer tensors are listed but not readable as weights") {
    write_zip(f.path(), {{"m/data.pkl", one_tensor_pickle("LongStorage", 1, 0, {1}, {1})}, {"m/data/0", std::string(8, '\0')}});
    auto ck = open_checkpoint(f.path());
    CHECK(ck->tensors()[0].dtype == "I64");
    CHECK_THROWS_AS(ck->read_f32(0), InputError);
  }
}

TEST_CASE("broken torch zips end in InputError") {
  ScratchFile f(".pth");
  const std::vector<float> data(6, 1.0f);
  SUBCASE("storage smaller than the pickle says") {
    write_zip(f.path(), {{"m/data.pkl", one_tensor_pickle("FloatStorage", 6, 0, {6}, {1})}, {"m/data/0", floats_bytes({1, 2})}});
    expect_refused(f.path(), "bytes but the pickle says");
  }
  SUBCASE("expanded view claiming a billion elements of a 1-element storage") {
    write_zip(f.path(), {{"m/data.pkl", one_tensor_pickle("FloatStorage", 1, 0, {1000000000}, {0})},
                         {"m/data/0", floats_bytes({1})}});
    expect_refused(f.path(), "more elements than its storage");
  }
  SUBCASE("storage entry missing") {
    write_zip(f.path(), {{"m/data.pkl", one_tensor_pickle("FloatStorage", 6, 0, {6}, {1})}});
    expect_refused(f.path(), "missing");
  }
  SUBCASE("no data.pkl") {
    write_zip(f.path(), {{"m/other", "x"}});
    expect_refused(f.path(), "data.pkl");
  }
  SUBCASE("root is not a dict") {
    PickleBuilder p;
    p.proto().op(']').stop();
    write_zip(f.path(), {{"m/data.pkl", p.bytes()}});
    expect_refused(f.path(), "not a dict");
  }
  SUBCASE("truncated at many offsets") {
    write_zip(f.path(), {{"archive/data.pkl", one_tensor_pickle("FloatStorage", 6, 0, {6}, {1})},
                         {"archive/data/0", floats_bytes(data)}});
    const std::string good = f.read();
    ScratchFile g(".pth");
    for (size_t cut = 0; cut < good.size(); cut += 7) {
      CAPTURE(cut);
      g.write(good.substr(0, cut));
      expect_refused(g.path());
    }
  }
  SUBCASE("random bytes behind a zip signature") {
    std::mt19937 rng(3);
    for (int i = 0; i < 100; ++i) {
      std::string s = "PK\x03\x04";
      for (int k = 0; k < 300; ++k) s += static_cast<char>(rng());
      f.write(s);
      expect_refused(f.path());
    }
  }
  SUBCASE("empty file") {
    f.write("");
    expect_refused(f.path(), "not a recognised checkpoint");
  }
  SUBCASE("legacy torch.save format") {
    f.write(std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15));
    expect_refused(f.path(), "_use_new_zipfile_serialization=True");
  }
  SUBCASE("missing file") { expect_refused("/nonexistent/x.pth", "cannot open"); }
}

TEST_CASE("hostile pickles inside a checkpoint never run") {
  std::remove(kMarker);
  ScratchFile f(".pth"), out(".pola");
  SUBCASE("the whole checkpoint is os.system(...)") {
    PickleBuilder p;
    p.proto().global("os", "system").mark().str(std::string("touch ") + kMarker).tuple().reduce().stop();
    write_zip(f.path(), {{"m/data.pkl", p.bytes()}});
    CHECK_THROWS_AS(convert_checkpoint(f.path(), out.path(), {}), InputError);
  }
  SUBCASE("a state dict value is builtins.exec(...)") {
    PickleBuilder p;
    p.proto().op('}').mark().str("w").global("builtins", "exec").mark()
        .str(std::string("open('") + kMarker + "','w')").tuple().reduce().op('u').stop();
    write_zip(f.path(), {{"m/data.pkl", p.bytes()}});
    CHECK_THROWS_AS(convert_checkpoint(f.path(), out.path(), {}), InputError);
  }
  CHECK_FALSE(pola::test::file_exists(kMarker));
  CHECK_FALSE(pola::test::file_exists(out.path()));
}

TEST_CASE("safetensors input: any float dtype, integer buffers listed") {
  ScratchFile f(".safetensors");
  const std::string header =
      R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},"i":{"dtype":"I64","shape":[1],"data_offsets":[16,24]}})";
  double d[2] = {1.5, -2.25};
  int64_t i = 7;
  f.write(pola::test::le64(header.size()) + header + std::string(reinterpret_cast<char *>(d), 16) +
          std::string(reinterpret_cast<char *>(&i), 8));
  auto ck = open_checkpoint(f.path());
  CHECK(ck->container() == "safetensors");
  REQUIRE(ck->tensors().size() == 2);
  CHECK(ck->read_f32(0) == std::vector<float>{1.5f, -2.25f});
  CHECK_THROWS_AS(ck->read_f32(1), InputError);
}

TEST_CASE("non-PolaFormer checkpoints are refused") {
  ScratchFile f(".pth"), out(".pola");
  PickleBuilder p;
  p.proto().op('}').mark().str("conv1.weight").tensor("FloatStorage", "0", 4, 0, {1, 1, 2, 2}, {4, 4, 2, 1}).str("fc.bias")
      .tensor("FloatStorage", "1", 1, 0, {1}, {1}).op('u').stop();
  write_zip(f.path(), {{"m/data.pkl", p.bytes()}, {"m/data/0", floats_bytes({1, 2, 3, 4})}, {"m/data/1", floats_bytes({1})}});
  CHECK_THROWS_WITH_AS(convert_checkpoint(f.path(), out.path(), {}), doctest::Contains("not a PolaFormer checkpoint"),
                       InputError);
  CHECK_FALSE(pola::test::file_exists(out.path()));
}
