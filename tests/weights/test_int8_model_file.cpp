// I8 tensors in the model file (FORMAT.md): written and read back with their
// checksums, laid out after F32 and BF16, and refused, by the writer and the
// reader alike, without valid per-row scales.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "weights/error.h"
#include "weights/int8_weights.h"
#include "weights/model_file.h"
#include "zip_writer.h"

using pola::InputError;
using pola::test::floats_bytes;
using pola::test::le64;
using pola::test::ScratchFile;
using namespace pola::weights;

namespace {

// Opening `bytes` must fail with an InputError naming the file and containing `what`.
void expect_open_refused(const std::string &bytes, const std::string &what) {
  ScratchFile f;
  f.write(bytes);
  try {
    ModelFile::open(f.path());
    FAIL("accepted a bad file");
  } catch (const InputError &e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find(f.path()) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(what) != std::string::npos, msg);
  }
}

// Writing `tensors` must fail naming the tensor problem `what`, and leave no file.
void expect_write_refused(const std::vector<TensorToWrite> &tensors, const std::string &what) {
  ScratchFile f;
  try {
    write_model_file(f.path(), {{"format", "polaformer"}}, tensors);
    FAIL("wrote a bad file");
  } catch (const InputError &e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find(f.path()) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(what) != std::string::npos, msg);
  }
  CHECK_FALSE(pola::test::file_exists(f.path()));
}

// A hand-made safetensors file (no checksums, as format version 1 files are
// read) holding the I8 tensor "w" of `shape` and, when `scale_dtype` is not
// empty, "w_scale" stored as `scale_dtype`, `scale_shape` (JSON) with the bytes
// `scale_data`. The writer refuses what these files hold, hence by hand.
const std::vector<int8_t> kQ = {-128, -1, 0, 1, 64, 127};
std::string int8_file(const std::string &shape, const std::string &scale_dtype, const std::string &scale_shape,
                      const std::string &scale_data) {
  const std::string q(reinterpret_cast<const char *>(kQ.data()), kQ.size());
  const size_t s = scale_dtype.empty() ? 0 : scale_data.size(); // the scales come first, 4-byte aligned
  std::string h = "{";
  if (!scale_dtype.empty())
    h += R"("w_scale":{"dtype":")" + scale_dtype + R"(","shape":)" + scale_shape + R"(,"data_offsets":[0,)" +
         std::to_string(s) + "]},";
  h += R"("w":{"dtype":"I8","shape":)" + shape + R"(,"data_offsets":[)" + std::to_string(s) + "," +
       std::to_string(s + q.size()) + "]}}";
  h += std::string((8 - h.size() % 8) % 8, ' ');
  return le64(h.size()) + h + (scale_dtype.empty() ? "" : scale_data) + q;
}

} // namespace

TEST_CASE("I8 tensors: round trip, layout after F32 and BF16, checksums") {
  ScratchFile f;
  const std::vector<int8_t> q = {-128, -127, -1, 0, 1, 2, 63, 64, 100, 126, 127, -5, 7, -9, 11};  // 3 x 5
  const std::vector<float> q_scale = {0.5f, 0.25f, 1e-3f};
  const std::vector<int8_t> r = {1, -2, 3, -4, 5, -6};  // 2 x 3, the last tensor in the file
  const std::vector<float> r_scale = {2.0f, 3.0f};
  const std::vector<float> bias = {0.1f, 0.2f, 0.3f};
  const std::vector<float> m = {1.0f, -2.0f, 0.5f};
  // Given I8 first: the writer must still put F32, then BF16, then I8.
  TensorToWrite qt{"q.weight", {3, 5}, nullptr, StoredDtype::i8, q.data()};
  TensorToWrite rt{"r.weight", {2, 3}, nullptr, StoredDtype::i8, r.data()};
  TensorToWrite mt{"m.weight", {3}, m.data(), StoredDtype::bf16};
  write_model_file(f.path(), {{"format", "polaformer"}},
                   {qt, rt, mt, {"b", {3}, bias.data()}, {"q.weight_scale", {3}, q_scale.data()},
                    {"r.weight_scale", {2}, r_scale.data()}});

  const ModelFile mf = ModelFile::open(f.path());
  CHECK(mf.has_checksums());
  const TensorView *tq = mf.find("q.weight");
  REQUIRE(tq);
  CHECK(tq->dtype == StoredDtype::i8);
  CHECK(tq->shape == std::vector<int64_t>{3, 5});
  CHECK(tq->numel == 15);
  CHECK(tq->data == nullptr);
  CHECK(tq->byte_size() == 15);
  CHECK(std::memcmp(tq->bytes, q.data(), q.size()) == 0);
  // tensor_as_f32 gives the raw integers, unscaled.
  const std::vector<float> raw = tensor_as_f32(*tq);
  REQUIRE(raw.size() == q.size());
  for (size_t i = 0; i < q.size(); ++i) CHECK(raw[i] == static_cast<float>(q[i]));
  CHECK(std::string(stored_dtype_name(StoredDtype::i8)) == "I8");
  CHECK(stored_dtype_size(StoredDtype::i8) == 1);
  CHECK(nlohmann::json::parse(mf.metadata_at("tensor_checksums")).contains("r.weight"));

  // Layout: every F32 tensor before every BF16 one, before every I8 one; alignment kept.
  auto at = [&](const char *name) { return reinterpret_cast<uintptr_t>(mf.find(name)->bytes); };
  for (const char *f32 : {"b", "q.weight_scale", "r.weight_scale"}) {
    CHECK(mf.find(f32)->dtype == StoredDtype::f32);
    CHECK(at(f32) % 4 == 0);
    CHECK(at(f32) < at("m.weight"));
  }
  CHECK(at("m.weight") % 2 == 0);
  CHECK(at("m.weight") < at("q.weight"));
  CHECK(at("q.weight") < at("r.weight"));
  CHECK(mf.find("q.weight_scale")->data[2] == 1e-3f);

  // A flipped bit in the last I8 tensor (the file's last bytes) fails its checksum.
  std::string bytes = f.read();
  bytes[bytes.size() - 2] = static_cast<char>(bytes[bytes.size() - 2] ^ 0x10);
  expect_open_refused(bytes, "tensor 'r.weight' fails its checksum");
}

TEST_CASE("I8 tensors: the writer refuses missing or bad scales and leaves no file") {
  const std::vector<int8_t> q = {1, 2, 3, 4, 5, 6};
  const TensorToWrite w{"w", {2, 3}, nullptr, StoredDtype::i8, q.data()};
  const std::vector<float> good = {0.5f, 0.25f}, wrong = {1, 1, 1}, zero = {0.5f, 0.0f}, negative = {-0.5f, 1.0f},
                           nan = {std::numeric_limits<float>::quiet_NaN(), 1.0f};
  expect_write_refused({w}, "I8 tensor 'w' has no scale tensor 'w_scale'");
  expect_write_refused({w, {"w_scale", {3}, wrong.data()}}, "'w_scale', the scales of I8 tensor 'w', has shape (3), expected (2)");
  expect_write_refused({w, {"w_scale", {2, 1}, good.data()}}, "has shape (2, 1), expected (2)");
  expect_write_refused({w, {"w_scale", {2}, zero.data()}}, "holds 0 at index 1; scales must be finite and > 0");
  expect_write_refused({w, {"w_scale", {2}, negative.data()}}, "holds -0.5 at index 0");
  expect_write_refused({w, {"w_scale", {2}, nan.data()}}, "holds nan at index 0");
  expect_write_refused({w, {"w_scale", {2}, good.data(), StoredDtype::bf16}}, "is BF16; scales must be F32");
  expect_write_refused({{"w", {}, nullptr, StoredDtype::i8, q.data()}, {"w_scale", {1}, good.data()}}, "has rank 0");
  expect_write_refused({{"w", {2, 3}, nullptr, StoredDtype::i8}, {"w_scale", {2}, good.data()}}, "'w' has no data");
  expect_write_refused({{"w", {2, 3}, good.data(), StoredDtype::f32, q.data()}}, "'w' has int8 data but is to be stored as F32");
  // The same tensors with a good scale are written.
  ScratchFile f;
  CHECK_NOTHROW(write_model_file(f.path(), {}, {w, {"w_scale", {2}, good.data()}}));
}

TEST_CASE("I8 tensors: the reader refuses missing or bad scales, naming the file and the tensor") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // The hand-made file with good scales opens: the refusals below are for their reason.
  {
    ScratchFile f;
    f.write(int8_file("[2,3]", "F32", "[2]", floats_bytes({0.5f, 0.25f})));
    const ModelFile mf = ModelFile::open(f.path());
    CHECK(mf.find("w")->dtype == StoredDtype::i8);
    CHECK(std::memcmp(mf.find("w")->bytes, kQ.data(), kQ.size()) == 0);
  }
  expect_open_refused(int8_file("[2,3]", "", "", ""), "I8 tensor 'w' has no scale tensor 'w_scale'");
  expect_open_refused(int8_file("[2,3]", "F32", "[3]", floats_bytes({1, 1, 1})),
                      "'w_scale', the scales of I8 tensor 'w', has shape (3), expected (2)");
  expect_open_refused(int8_file("[2,3]", "F32", "[1]", floats_bytes({1})), "has shape (1), expected (2)");
  expect_open_refused(int8_file("[2,3]", "F32", "[2]", floats_bytes({0.5f, 0.0f})),
                      "'w_scale', the scales of I8 tensor 'w', holds 0 at index 1; scales must be finite and > 0");
  expect_open_refused(int8_file("[2,3]", "F32", "[2]", floats_bytes({0.5f, -0.0f})), "holds -0 at index 1");
  expect_open_refused(int8_file("[2,3]", "F32", "[2]", floats_bytes({-2.0f, 1.0f})), "holds -2 at index 0");
  // A NaN scale is refused by the check every F32 tensor passes, naming the scale tensor.
  expect_open_refused(int8_file("[2,3]", "F32", "[2]", floats_bytes({1.0f, nan})), "tensor 'w_scale' holds 1 non-finite");
  expect_open_refused(int8_file("[2,3]", "BF16", "[2]", std::string("\x80\x3f\x80\x3f", 4)), "is BF16; scales must be F32");
  expect_open_refused(int8_file("[6]", "F32", "[1]", floats_bytes({1.0f})), "has shape (1), expected (6)");
  // Rank 0: no output channel to scale (6 bytes: a 6-element shape of rank 0 cannot exist, so 1 element).
  {
    std::string h = R"({"w_scale":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"I8","shape":[],"data_offsets":[4,5]}})";
    h += std::string((8 - h.size() % 8) % 8, ' ');
    expect_open_refused(le64(h.size()) + h + floats_bytes({1.0f}) + "\x05", "I8 tensor 'w' has rank 0");
  }
  // Another integer dtype is still no model file's.
  expect_open_refused(int8_file("[2,3]", "I32", "[2]", std::string(8, '\1')), "F32, BF16 or I8 tensors only");
}
