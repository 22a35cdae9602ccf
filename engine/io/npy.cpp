// .npy reader and writer (format: numpy.lib.format, versions 1.0/2.0/3.0).
//
// Layout: 6-byte magic "\x93NUMPY", major and minor version bytes, the header
// length (uint16 little-endian in 1.0, uint32 in 2.0/3.0), the header (an
// ASCII Python dict literal ending in '\n'), then the raw data.
#include "engine/io/npy.h"

#include <cerrno>
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

// Opens `path` and checks everything before its data (see read_npy); returns
// the shape, with `in` at the first data byte.
std::vector<int64_t> open_npy(const std::string &path, std::ifstream &in) {
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

  std::string descr;
  bool fortran_order = true;
  std::vector<int64_t> shape;
  HeaderParser(path, header).parse(&descr, &fortran_order, &shape);
  if (descr != "<f4") fail_in_file(path, "dtype '" + descr + "' is not supported (only little-endian float32 '<f4')");
  if (fortran_order) fail_in_file(path, "Fortran-order arrays are not supported (save with C order)");

  // Element count with overflow checks; must match the bytes that follow.
  const uint64_t data_bytes = file_size - preamble_len - header_len;
  uint64_t numel = 1;
  for (int64_t d : shape) {
    const uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && numel > (std::numeric_limits<uint64_t>::max() / 4) / ud)
      fail_in_file(path, "shape " + shape_text(shape) + " is absurdly large");
    numel *= ud;
  }
  if (numel * 4 != data_bytes)
    fail_in_file(path, "shape " + shape_text(shape) + " needs " + std::to_string(numel * 4) + " data bytes but the file has " +
                   std::to_string(data_bytes));
  return shape;
}

} // namespace

std::vector<int64_t> read_npy_shape(const std::string &path) {
  std::ifstream in;
  return open_npy(path, in);
}

NpyArray read_npy(const std::string &path) {
  std::ifstream in;
  NpyArray out;
  out.shape = open_npy(path, in);
  uint64_t numel = 1;
  for (int64_t d : out.shape) numel *= static_cast<uint64_t>(d);  // checked by open_npy
  out.data.resize(numel);
  if (numel) {
    in.read(reinterpret_cast<char *>(out.data.data()), static_cast<std::streamsize>(numel * 4));
    if (!in) fail_in_file(path, "read error in the .npy data");
  }
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
