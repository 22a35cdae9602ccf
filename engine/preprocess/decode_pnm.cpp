#include "engine/preprocess/decode_pnm.h"

#include <algorithm>
#include <cmath>

#include "engine/preprocess/decode_problem.h"
#include "weights/error.h"

namespace pola::preprocess {
namespace {

[[noreturn]] void fail(const std::string &name, const std::string &what) {
  throw InputError(name + ": malformed PNM file: " + what);
}

bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Header tokens are separated by whitespace; '#' starts a comment to end of line.
void skip_space_and_comments(const uint8_t *d, size_t size, size_t *pos) {
  while (*pos < size) {
    if (is_space(d[*pos])) {
      ++*pos;
    } else if (d[*pos] == '#') {
      while (*pos < size && d[*pos] != '\n' && d[*pos] != '\r') ++*pos;
    } else {
      break;
    }
  }
}

int read_number(const uint8_t *d, size_t size, size_t *pos, const std::string &name, const char *what) {
  skip_space_and_comments(d, size, pos);
  if (*pos >= size || d[*pos] < '0' || d[*pos] > '9') fail(name, std::string("expected the ") + what);
  int64_t v = 0;
  while (*pos < size && d[*pos] >= '0' && d[*pos] <= '9') {
    v = v * 10 + (d[*pos] - '0');
    if (v > INT32_MAX) fail(name, std::string("the ") + what + " is too large");
    ++*pos;
  }
  return int(v);
}

} // namespace

bool looks_like_binary_pnm(const uint8_t *data, size_t size) {
  return size >= 2 && data[0] == 'P' && (data[1] == '5' || data[1] == '6');
}

PnmHeader parse_pnm_header(const uint8_t *data, size_t size, const std::string &name) {
  if (!looks_like_binary_pnm(data, size)) fail(name, "not a binary PGM/PPM");
  if (size < 3 || !is_space(data[2]))
    fail(name, "not a valid PGM/PPM: the magic number must be followed by whitespace");
  PnmHeader h;
  h.channels = data[1] == '5' ? 1 : 3;
  size_t pos = 2;
  h.width = read_number(data, size, &pos, name, "width");
  h.height = read_number(data, size, &pos, name, "height");
  h.maxval = read_number(data, size, &pos, name, "maxval");
  if (h.maxval < 1 || h.maxval > 65535) fail(name, "maxval " + std::to_string(h.maxval) + " is outside 1..65535");
  // Exactly one whitespace byte separates maxval from the samples.
  if (pos >= size || !is_space(data[pos])) fail(name, "no whitespace after maxval");
  h.data_offset = pos + 1;
  return h;
}

ImageU8 decode_pnm_rgb(const uint8_t *data, size_t size, const PnmHeader &h, const std::string &name) {
  const int bytes_per_sample = h.maxval > 255 ? 2 : 1;
  const size_t samples = size_t(h.width) * h.height * h.channels;
  if (size - h.data_offset < samples * bytes_per_sample)
    throw InputError(name + ": " + truncated_problem("PNM"));
  const uint8_t *p = data + h.data_offset;

  // PIL keeps grey samples above 255 (mode "I") only to clip them at 255 when
  // converting, so grey ends up as min(scaled, 255) either way.
  const bool grey_mode_i = h.channels == 1 && h.maxval > 255;
  const bool rescale = !(h.maxval == 255 || (grey_mode_i && h.maxval == 65535));
  const double out_max = grey_mode_i ? 65535.0 : 255.0;

  // One table entry per possible sample value: same result, one division each.
  std::vector<uint8_t> table(size_t(bytes_per_sample == 2 ? 65536 : 256));
  for (size_t v = 0; v < table.size(); ++v) {
    double scaled = double(v);
    if (rescale) scaled = std::min(out_max, std::nearbyint(double(v) / h.maxval * out_max)); // half to even
    table[v] = uint8_t(std::min(scaled, 255.0));
  }

  ImageU8 out(h.width, h.height, 3);
  for (size_t i = 0; i < size_t(h.width) * h.height; ++i) {
    for (int c = 0; c < 3; ++c) {
      const size_t s = i * h.channels + (h.channels == 3 ? c : 0);
      const unsigned v = bytes_per_sample == 2 ? (unsigned(p[2 * s]) << 8) | p[2 * s + 1] : p[s];
      out.pixels[i * 3 + c] = table[v];
    }
  }
  return out;
}

} // namespace pola::preprocess
