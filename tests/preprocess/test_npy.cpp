// engine/io/npy: round trips and a table of malformed files the reader must
// refuse with an InputError that names the file.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "engine/io/npy.h"
#include "image_writers.h"
#include "weights/error.h"

using pola::io::read_npy;
using pola::io::write_npy;
using pola::test::temp_path;

namespace {

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

// A version 1.0 file with an arbitrary header text and `data_bytes` zero bytes.
std::string npy_v1(const std::string &header, size_t data_bytes) {
  std::string h = header + "\n";
  std::string s = "\x93NUMPY";
  s += '\x01';
  s += '\x00';
  s += char(h.size() & 0xff);
  s += char(h.size() >> 8);
  return s + h + std::string(data_bytes, '\0');
}

std::string error_of(const std::string &path) {
  try {
    read_npy(path);
  } catch (const pola::InputError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("npy: write then read gives back shape and data bit for bit") {
  const std::string path = temp_path("roundtrip.npy");
  for (const std::vector<int64_t> &shape : std::vector<std::vector<int64_t>>{{1, 3, 4, 5}, {7}, {}, {2, 0, 3}}) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> data(static_cast<size_t>(n));
    for (size_t i = 0; i < data.size(); ++i) data[i] = float(i) * 0.37f - 5.0f;
    if (!data.empty()) data[0] = -0.0f;
    write_npy(path, shape, data.data());

    const std::string bytes = slurp(path);
    const size_t header_len = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
    CHECK((10 + header_len) % 64 == 0); // data 64-byte aligned
    CHECK(bytes[10 + header_len - 1] == '\n');

    const auto a = read_npy(path);
    CHECK(a.shape == shape);
    REQUIRE(a.data.size() == data.size());
    if (!data.empty()) CHECK(std::memcmp(a.data.data(), data.data(), data.size() * 4) == 0);
  }
  std::remove(path.c_str());
}

TEST_CASE("npy: reads the header variants numpy writes") {
  const std::string path = temp_path("variants.npy");
  struct Case {
    const char *header;
    std::vector<int64_t> shape;
  };
  for (const Case &c : {Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", {2, 3}},
                        Case{"{\"descr\": \"<f4\", \"shape\": (6,), \"fortran_order\": False}", {6}},
                        Case{"{'descr':'<f4','fortran_order':False,'shape':(3L, 2L)}   ", {3, 2}}}) {
    CAPTURE(c.header);
    spit(path, npy_v1(c.header, 24));
    CHECK(read_npy(path).shape == c.shape);
  }
  // Version 2.0: 4-byte header length.
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n";
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
  v2 += char(h.size());
  v2 += std::string(3, '\0');
  spit(path, v2 + h + std::string(4, '\0'));
  CHECK(read_npy(path).shape == std::vector<int64_t>{1});
  std::remove(path.c_str());
}

TEST_CASE("npy: malformed files are refused with the file name and the reason") {
  const std::string path = temp_path("bad.npy");
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  struct Case {
    const char *name;
    std::string bytes;
    const char *reason; // a fragment of the expected message
  };
  const std::string valid = npy_v1(good, 24);
  const Case cases[] = {
      {"empty file", "", "not a .npy file"},
      {"truncated preamble", valid.substr(0, 7), "not a .npy file"},
      {"wrong magic", "\x93NUMPX" + valid.substr(6), "bad magic"},
      {"unknown version", valid.substr(0, 6) + "\x04" + valid.substr(7), "unsupported .npy version"},
      {"header longer than the file", valid.substr(0, 40), "exceeds the file size"},
      {"truncated data", valid.substr(0, valid.size() - 1), "needs 24 data bytes"},
      {"extra data", valid + "xxxx", "needs 24 data bytes"},
      {"float64", npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 48), "'<f8' is not supported"},
      {"big-endian float32", npy_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24),
       "'>f4' is not supported"},
      {"int32", npy_v1("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 24), "not supported"},
      {"fortran order", npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24), "Fortran"},
      {"shape/size mismatch", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 3), }", 24),
       "needs 36 data bytes"},
      {"absurd dims", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }", 24),
       "absurdly large"},
      {"dimension beyond int64", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 24),
       "does not fit"},
      {"too many dims",
       npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }", 4),
       "more than 16 dimensions"},
      {"negative dim", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 6), }", 24), "non-negative"},
      {"missing key", npy_v1("{'descr': '<f4', 'shape': (2, 3), }", 24), "must contain"},
      {"unknown key", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 24),
       "unexpected key"},
      {"duplicate key", npy_v1("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 24),
       "duplicate"},
      {"not a dict", npy_v1("[1, 2]", 24), "expected '{'"},
      {"garbage after dict", npy_v1(good + " x", 24), "trailing characters"},
  };
  for (const Case &c : cases) {
    CAPTURE(c.name);
    spit(path, c.bytes);
    const std::string msg = error_of(path);
    CHECK(msg.find(path) != std::string::npos);
    CHECK_MESSAGE(msg.find(c.reason) != std::string::npos, msg);
  }
  std::remove(path.c_str());
  CHECK(error_of(temp_path("does_not_exist.npy")).find("cannot open") != std::string::npos);
}

TEST_CASE("npy: a failed write leaves no file behind") {
  const std::string path = "/nonexistent_dir_for_pola_tests/x.npy";
  const float v = 1.0f;
  CHECK_THROWS_AS(write_npy(path, {1}, &v), pola::InputError);
}
