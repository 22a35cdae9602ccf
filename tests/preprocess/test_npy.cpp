// engine/io/npy: round trips and a table of malformed files the reader must
// refuse with an InputError that names the file.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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
      {"bool", npy_v1("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", 6), "'|b1' is not supported"},
      {"complex64", npy_v1("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", 48), "real numbers"},
      {"unicode", npy_v1("{'descr': '<U3', 'fortran_order': False, 'shape': (2, 3), }", 72), "'<U3' is not supported"},
      {"object", npy_v1("{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }", 48), "'|O' is not supported"},
      {"datetime", npy_v1("{'descr': '<M8[s]', 'fortran_order': False, 'shape': (2, 3), }", 48), "not supported"},
      {"float of 3 bytes", npy_v1("{'descr': '<f3', 'fortran_order': False, 'shape': (2, 3), }", 18), "not supported"},
      {"int of 3 bytes", npy_v1("{'descr': '<i3', 'fortran_order': False, 'shape': (2, 3), }", 18), "not supported"},
      {"structured", npy_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }", 24), "quoted string"},
      {"float64 data cut short", npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 24),
       "needs 48 data bytes"},
      {"Fortran order, data cut short", npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 20),
       "needs 24 data bytes"},
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

namespace {

// A version 1.0 file of `descr` holding `data` (the element bytes exactly as numpy writes them).
template <class T>
std::string npy_of(const std::string &descr, bool fortran, const std::string &shape, const std::vector<T> &values,
                   bool swap_bytes = false) {
  std::string data;
  for (const T &v : values) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    if (swap_bytes) std::reverse(bytes, bytes + sizeof(T));
    data.append(bytes, sizeof(T));
  }
  const std::string h = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                        ", 'shape': " + shape + ", }";
  return npy_v1(h, 0) + data;
}

} // namespace

TEST_CASE("npy: real numbers of any dtype, byte order and memory order are read as float32 in C order") {
  // What numpy's astype(np.float32) and ascontiguousarray give, so `pola run` takes what Model.run takes.
  const std::string path = temp_path("converted.npy");
  const std::vector<float> c_order{1.5f, -2.0f, 3.25f, 4.0f, -5.5f, 6.0f}; // shape (2, 3)
  const std::vector<float> f_order{1.5f, 4.0f, -2.0f, -5.5f, 3.25f, 6.0f}; // the same array, columns first
  struct Case {
    const char *name;
    std::string bytes;
  };
  const auto as = [](const std::vector<float> &v, auto zero) {
    std::vector<decltype(zero)> out;
    for (float f : v) out.push_back(static_cast<decltype(zero)>(f));
    return out;
  };
  const std::vector<float> ints{1.0f, -2.0f, 3.0f, 4.0f, -5.0f, 6.0f};
  const std::vector<float> uints{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 250.0f};
  const std::vector<Case> floats{
      {"<f4", npy_of("<f4", false, "(2, 3)", c_order)},
      {"<f4 Fortran", npy_of("<f4", true, "(2, 3)", f_order)},
      {">f4", npy_of(">f4", false, "(2, 3)", c_order, true)},
      {"<f8", npy_of("<f8", false, "(2, 3)", as(c_order, 0.0))},
      {">f8 Fortran", npy_of(">f8", true, "(2, 3)", as(f_order, 0.0), true)},
      {"=f8", npy_of("=f8", false, "(2, 3)", as(c_order, 0.0))},
      // float16: 1.5, -2, 3.25, 4, -5.5, 6
      {"<f2", npy_of<uint16_t>("<f2", false, "(2, 3)", {0x3e00, 0xc000, 0x4280, 0x4400, 0xc580, 0x4600})},
  };
  for (const Case &c : floats) {
    CAPTURE(c.name);
    spit(path, c.bytes);
    const auto a = read_npy(path);
    CHECK(a.shape == std::vector<int64_t>{2, 3});
    CHECK(a.data == c_order);
  }
  const std::vector<Case> int_cases{
      {"|i1", npy_of("|i1", false, "(2, 3)", as(ints, int8_t(0)))},
      {"<i2 Fortran", npy_of("<i2", true, "(2, 3)", std::vector<int16_t>{1, 4, -2, -5, 3, 6})},
      {">i4", npy_of(">i4", false, "(2, 3)", as(ints, int32_t(0)), true)},
      {"<i8", npy_of("<i8", false, "(2, 3)", as(ints, int64_t(0)))},
  };
  for (const Case &c : int_cases) {
    CAPTURE(c.name);
    spit(path, c.bytes);
    CHECK(read_npy(path).data == ints);
  }
  const std::vector<Case> uint_cases{
      {"|u1", npy_of("|u1", false, "(2, 3)", as(uints, uint8_t(0)))},
      {">u2", npy_of(">u2", false, "(2, 3)", as(uints, uint16_t(0)), true)},
      {"<u4", npy_of("<u4", false, "(2, 3)", as(uints, uint32_t(0)))},
      {"<u8", npy_of("<u8", false, "(2, 3)", as(uints, uint64_t(0)))},
  };
  for (const Case &c : uint_cases) {
    CAPTURE(c.name);
    spit(path, c.bytes);
    CHECK(read_npy(path).data == uints);
  }
  // float64 rounds to the nearest float32, as numpy does; beyond float32's range it becomes inf
  // (which `pola run` then refuses as non-finite)
  spit(path, npy_of("<f8", false, "(3,)", std::vector<double>{0.1, 1e300, -1e-320}));
  const auto r = read_npy(path);
  CHECK(r.data[0] == 0.1f);
  CHECK(std::isinf(r.data[1]));
  CHECK((r.data[2] == 0.0f && std::signbit(r.data[2])));
  // Fortran order of a higher rank: element [i][j][k] sits at i + 2 * (j + 3 * k)
  std::vector<float> fortran(24), expected(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const float v = float(100 * i + 10 * j + k);
        fortran[size_t(i + 2 * (j + 3 * k))] = v;
        expected[size_t((i * 3 + j) * 4 + k)] = v;
      }
  spit(path, npy_of("<f4", true, "(2, 3, 4)", fortran));
  CHECK(read_npy(path).data == expected);
  std::remove(path.c_str());
}

TEST_CASE("npy: a failed write leaves no file behind") {
  const std::string path = "/nonexistent_dir_for_pola_tests/x.npy";
  const float v = 1.0f;
  CHECK_THROWS_AS(write_npy(path, {1}, &v), pola::InputError);
}
