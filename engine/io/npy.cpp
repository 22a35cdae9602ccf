// .npy reader and writer (format: numpy.lib.format, versions 1.0/2.0/3.0).
//
// Layout: 6-byte magic "\x93NUMPY", major and minor version bytes, the header
// length (uint16 little-endian in 1.0, uint32 in 2.0/3.0), the header (an
// ASCII Python dict literal ending in '\n'), then the raw data.
#include "engine/io/npy.h"

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "weights/error.h"
#include "weights/file_access.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.cpp reads and writes '<f4' by copying bytes: it assumes a little-endian host"
#endif

namespace pola::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// A header is a one-line dict; numpy itself refuses anything above 10 kB by
// default when reading. Cap it so a hostile length cannot make us allocate.
constexpr uint64_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kDataAlignment = 64;


// Parser for the restricted Python literal numpy writes:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
// Only string, True/False and tuple-of-int values are understood; anything
// else is an error (we never evaluate the header the way Python would).
class HeaderParser {
 public:
  HeaderParser(const std::string &path, const std::string &text) : path_(path), s_(text) {}

  void parse(std::string *descr, bool *fortran_order, std::vector<int64_t> *shape) {
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        if (seen_descr) bad("duplicate key 'descr'");
        seen_descr = true;
        *descr = parse_string();
      } else if (key == "fortran_order") {
        if (seen_order) bad("duplicate key 'fortran_order'");
        seen_order = true;
        *fortran_order = parse_bool();
      } else if (key == "shape") {
        if (seen_shape) bad("duplicate key 'shape'");
        seen_shape = true;
        *shape = parse_shape();
      } else {
        bad("unexpected key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad("expected ',' or '}'");
    }
    expect('}');
    skip_space(); // the padding: spaces and the final newline
    if (pos_ != s_.size()) bad("trailing characters after the header dictionary");
    if (!seen_descr || !seen_order || !seen_shape)
      bad("header must contain 'descr', 'fortran_order' and 'shape'");
  }

 private:
  [[noreturn]] void bad(const std::string &what) { fail_in_file(path_, "malformed .npy header: " + what); }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') bad("expected a quoted string");
    ++pos_;
    size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) bad("unterminated string");
    std::string out = s_.substr(pos_, end - pos_);
    if (out.find('\\') != std::string::npos) bad("escape sequences are not supported");
    pos_ = end + 1;
    return out;
  }
  bool parse_bool() {
    skip_space();
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    bad("expected True or False");
  }
  int64_t parse_dim() {
    skip_space();
    if (peek() < '0' || peek() > '9') bad("expected a non-negative integer dimension");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = peek() - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) bad("dimension does not fit in 64 bits");
      v = v * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_; // Python 2 long suffix, still written by old numpy
    return v;
  }
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      if (shape.size() == kNpyMaxRank) bad("more than " + std::to_string(kNpyMaxRank) + " dimensions");
      shape.push_back(parse_dim());
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') bad("expected ',' or ')' in shape");
    }
    expect(')');
    return shape;
  }

  const std::string &path_;
  const std::string &s_;
  size_t pos_ = 0;
};

// How the elements of a .npy are stored: numpy's kind ('f' float, 'i' signed,
// 'u' unsigned), bytes per element and byte order.
struct ElementType {
  char kind = 'f';
  int size = 4;
  bool big_endian = false;
};

// float128 ('f16') is the x87 80-bit format padded to 16 bytes, as numpy stores it on x86-64.
constexpr bool kLongDoubleIsX87 = sizeof(long double) == 16 && LDBL_MANT_DIG == 64;

// Real numbers of any width numpy writes, in either byte order: what Model.run
// converts in Python, so `pola run` takes the same files. Everything else
// (bool, complex, strings, objects, dates, structured) is refused.
ElementType element_type(const std::string &path, const std::string &descr) {
  const auto refuse = [&] {
    fail_in_file(path, "dtype '" + descr +
                           "' is not supported: a .npy input must hold real numbers (float16, float32, float64, "
                           "float128 or integers, either byte order), which are converted to float32");
  };
  if (descr.size() < 3 || descr.size() > 4 || std::string("<>|=").find(descr[0]) == std::string::npos) refuse();
  ElementType t;
  t.kind = descr[1];
  const std::string digits = descr.substr(2);
  if (digits.find_first_not_of("0123456789") != std::string::npos) refuse();
  t.size = std::stoi(digits);
  t.big_endian = descr[0] == '>';
  const bool known = (t.kind == 'f' && (t.size == 2 || t.size == 4 || t.size == 8 || (t.size == 16 && kLongDoubleIsX87))) ||
                     ((t.kind == 'i' || t.kind == 'u') && (t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8));
  if (!known || (descr[0] == '|' && t.size != 1)) refuse();
  return t;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) { // zero or subnormal: mantissa * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  uint32_t bits = sign | (exponent == 0x1f ? 0x7f800000u | (mantissa << 13) : ((exponent + 112) << 23) | (mantissa << 13));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Rounds to the nearest float as a C cast does (and so numpy's astype), with
// magnitudes beyond float's range going to infinity instead of being undefined.
template <class Wide>
float narrow(Wide v) {
  if (std::isfinite(v) && std::fabs(v) > static_cast<Wide>(FLT_MAX)) {
    // Halfway between FLT_MAX and the next power of two rounds up (FLT_MAX's last bit is odd).
    const Wide halfway = static_cast<Wide>(FLT_MAX) + std::ldexp(static_cast<Wide>(1), 103);
    const float big = std::fabs(v) >= halfway ? std::numeric_limits<float>::infinity() : FLT_MAX;
    return v < 0 ? -big : big;
  }
  return static_cast<float>(v);
}

// One element at `p` (native byte order) as float32.
float element_value(const unsigned char *p, const ElementType &t) {
  const auto load = [p](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (t.kind) {
  case 'f':
    if (t.size == 2) return half_to_float(load(uint16_t{}));
    if (t.size == 4) return load(float{});
    if (t.size == 8) return narrow(load(double{}));
    return narrow(load(static_cast<long double>(0)));
  case 'i':
    if (t.size == 1) return static_cast<float>(load(int8_t{}));
    if (t.size == 2) return static_cast<float>(load(int16_t{}));
    if (t.size == 4) return static_cast<float>(load(int32_t{}));
    return static_cast<float>(load(int64_t{}));
  default:
    if (t.size == 1) return static_cast<float>(load(uint8_t{}));
    if (t.size == 2) return static_cast<float>(load(uint16_t{}));
    if (t.size == 4) return static_cast<float>(load(uint32_t{}));
    return static_cast<float>(load(uint64_t{}));
  }
}

// Reads `numel` elements of type `t` from `in` into `out` (C order), a chunk
// at a time so a float64 file never needs twice its size in memory. A
// Fortran-order file lists the elements first index fastest.
void read_converted(std::ifstream &in, const std::string &path, const ElementType &t, bool fortran_order,
                    const std::vector<int64_t> &shape, float *out, uint64_t numel) {
  std::vector<int64_t> c_stride(shape.size(), 1), index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 1;) c_stride[d - 1] = c_stride[d] * shape[d];
  constexpr uint64_t kChunkElements = 1 << 16;
  std::vector<unsigned char> chunk(static_cast<size_t>(std::min(numel, kChunkElements)) * t.size);
  int64_t dst = 0; // where the next element goes, for Fortran order
  for (uint64_t first = 0; first < numel; first += kChunkElements) {
    const uint64_t n = std::min(kChunkElements, numel - first);
    in.read(reinterpret_cast<char *>(chunk.data()), static_cast<std::streamsize>(n * t.size));
    if (!in) fail_in_file(path, "read error in the .npy data");
    for (uint64_t e = 0; e < n; ++e) {
      unsigned char *p = chunk.data() + e * t.size;
      if (t.big_endian) std::reverse(p, p + t.size);
      const float v = element_value(p, t);
      if (!fortran_order) {
        out[first + e] = v;
        continue;
      }
      out[dst] = v;
      for (size_t d = 0; d < shape.size(); ++d) { // the next index, dimension 0 fastest
        dst += c_stride[d];
        if (++index[d] < shape[d]) break;
        dst -= c_stride[d] * shape[d];
        index[d] = 0;
      }
    }
  }
}

uint64_t read_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string shape_text(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// What a .npy file's header says, checked against the file: the shape, the
// element type and layout, the element count. `in` is left at the data.
struct NpyHeader {
  std::vector<int64_t> shape;
  std::string descr;
  bool fortran_order = true;
  ElementType type;
  uint64_t numel = 1;
};

NpyHeader open_npy(const std::string &path, std::ifstream &in) {
  weights::require_regular_file(path);  // a FIFO or device is refused, never waited on
  in.open(path, std::ios::binary);
  if (!in) fail_in_file(path, std::string("cannot open: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0) fail_in_file(path, "cannot determine the file size");
  const uint64_t file_size = static_cast<uint64_t>(end);
  in.seekg(0);

  // Preamble: magic (6), version (2), header length (2 or 4).
  unsigned char pre[12] = {};
  if (file_size < 10) fail_in_file(path, "not a .npy file (only " + std::to_string(file_size) + " bytes)");
  in.read(reinterpret_cast<char *>(pre), 10);
  if (!in) fail_in_file(path, "read error in the .npy preamble");
  if (std::memcmp(pre, kMagic, kMagicLen) != 0) fail_in_file(path, "not a .npy file (bad magic)");
  const int major = pre[6], minor = pre[7];
  if (minor != 0 || (major != 1 && major != 2 && major != 3))
    fail_in_file(path, "unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor));
  uint64_t header_len = 0, preamble_len = 10;
  if (major == 1) {
    header_len = read_le(pre + 8, 2);
  } else {
    if (file_size < 12) fail_in_file(path, "truncated .npy preamble");
    in.read(reinterpret_cast<char *>(pre + 10), 2);
    if (!in) fail_in_file(path, "read error in the .npy preamble");
    header_len = read_le(pre + 8, 4);
    preamble_len = 12;
  }
  if (header_len > kMaxHeaderBytes) fail_in_file(path, "implausible .npy header length " + std::to_string(header_len));
  if (preamble_len + header_len > file_size)
    fail_in_file(path, "truncated: header length " + std::to_string(header_len) + " exceeds the file size " +
                   std::to_string(file_size));

  std::string header(header_len, '\0');
  in.read(&header[0], static_cast<std::streamsize>(header_len));
  if (!in) fail_in_file(path, "read error in the .npy header");

  NpyHeader h;
  HeaderParser(path, header).parse(&h.descr, &h.fortran_order, &h.shape);
  h.type = element_type(path, h.descr);

  // Element count with overflow checks (the floats it becomes, too); must match the bytes that follow.
  const uint64_t data_bytes = file_size - preamble_len - header_len;
  const uint64_t widest = static_cast<uint64_t>(std::max(h.type.size, 4));
  uint64_t &numel = h.numel;
  for (int64_t d : h.shape) {
    const uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && numel > (std::numeric_limits<uint64_t>::max() / widest) / ud)
      fail_in_file(path, "shape " + shape_text(h.shape) + " is absurdly large");
    numel *= ud;
  }
  const uint64_t needed = numel * static_cast<uint64_t>(h.type.size);
  if (needed != data_bytes)
    fail_in_file(path, "shape " + shape_text(h.shape) + " of '" + h.descr + "' needs " + std::to_string(needed) +
                           " data bytes but the file has " + std::to_string(data_bytes));
  return h;
}

} // namespace

std::vector<int64_t> read_npy_shape(const std::string &path) {
  std::ifstream in;
  return open_npy(path, in).shape;
}

NpyArray read_npy(const std::string &path) {
  std::ifstream in;
  const NpyHeader h = open_npy(path, in);
  const uint64_t numel = h.numel;
  NpyArray out;
  out.shape = h.shape;
  out.data.resize(numel);
  if (numel == 0) return out;
  if (h.descr == "<f4" && !h.fortran_order) { // the common case: the bytes are the floats
    in.read(reinterpret_cast<char *>(out.data.data()), static_cast<std::streamsize>(numel * 4));
    if (!in) fail_in_file(path, "read error in the .npy data");
    return out;
  }
  read_converted(in, path, h.type, h.fortran_order, out.shape, out.data.data(), numel);
  return out;
}

void write_npy(const std::string &path, const std::vector<int64_t> &shape, const float *data) {
  if (shape.size() > kNpyMaxRank) fail_in_file(path, "cannot write an array of rank " + std::to_string(shape.size()));
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) fail_in_file(path, "cannot write a negative dimension");
    numel *= static_cast<uint64_t>(d);
  }
  if (numel && !data) fail_in_file(path, "no data to write");

  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
  // Pad with spaces and end with '\n' so magic+version+length+header is a
  // multiple of 64 bytes: the data can then be mapped and read aligned.
  const size_t unpadded = kMagicLen + 2 + 2 + header.size() + 1;
  header.append((kDataAlignment - unpadded % kDataAlignment) % kDataAlignment, ' ');
  header += '\n';

  std::string preamble(kMagic, kMagicLen);
  preamble += '\x01';
  preamble += '\x00';
  preamble += static_cast<char>(header.size() & 0xff);
  preamble += static_cast<char>((header.size() >> 8) & 0xff);

  weights::write_output_file(path, [&](weights::OutputSink &out) {
    out.write(preamble.data(), preamble.size());
    out.write(header.data(), header.size());
    if (numel) out.write(data, numel * 4);
  });
}

} // namespace pola::io
