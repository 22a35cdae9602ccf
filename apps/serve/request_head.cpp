#include "request_head.h"

#include <strings.h>

#include <cctype>

namespace pola::serve {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

std::string trimmed(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

} // namespace

std::string RequestHead::header(const std::string &name, int *count) const {
  std::string value;
  int n = 0;
  for (const auto &[k, v] : headers)
    if (strcasecmp(k.c_str(), name.c_str()) == 0) {
      if (n++ == 0) value = v;
    }
  if (count) *count = n;
  return value;
}

bool RequestHead::has_header(const std::string &name) const {
  int n = 0;
  header(name, &n);
  return n > 0;
}

// httplib reads lines ending in "\n" (a "\r" before it optional), so the
// head ends at the first empty line of either kind.
std::optional<size_t> head_end(const std::string &bytes, size_t max_head) {
  const size_t limit = std::min(bytes.size(), max_head);
  for (size_t i = bytes.find('\n'); i != std::string::npos && i < limit; i = bytes.find('\n', i + 1)) {
    if (i + 1 < bytes.size() && bytes[i + 1] == '\n') return i + 2;
    if (i + 2 < bytes.size() && bytes[i + 1] == '\r' && bytes[i + 2] == '\n') return i + 3;
  }
  return std::nullopt;
}

std::vector<std::string> query_parameter_names(const std::string &query) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= query.size()) {
    size_t amp = query.find('&', start);
    if (amp == std::string::npos) amp = query.size();
    const std::string pair = query.substr(start, amp - start);
    if (!pair.empty()) names.push_back(percent_decoded(pair.substr(0, pair.find('='))));
    start = amp + 1;
  }
  return names;
}

std::optional<RequestHead> parse_request_head(const std::string &bytes, size_t end) {
  RequestHead h;
  h.size = end;
  size_t line_end = bytes.find('\n');
  if (line_end == std::string::npos || line_end >= end) return std::nullopt;
  const std::string line = trimmed(bytes.substr(0, line_end));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  if (sp2 == std::string::npos || line.compare(sp2 + 1, 5, "HTTP/") != 0) return std::nullopt;
  h.method = line.substr(0, sp1);
  const std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const size_t q = target.find('?');
  h.path = target.substr(0, q);
  if (q != std::string::npos) h.param_names = query_parameter_names(target.substr(q + 1));
  size_t pos = line_end + 1;
  while (pos < end) {
    const size_t e = bytes.find('\n', pos);
    if (e == std::string::npos || e >= end) break;
    const std::string field = bytes.substr(pos, e - pos);
    pos = e + 1;
    if (trimmed(field).empty()) break;
    const size_t colon = field.find(':');
    if (colon == std::string::npos) return std::nullopt;
    h.headers.emplace_back(field.substr(0, colon), trimmed(field.substr(colon + 1)));
  }
  return h;
}

std::optional<size_t> chunked_body_end(const std::string &bytes, size_t start, ChunkScan &scan) {
  size_t pos = scan.resume ? scan.resume : start;
  for (;;) {
    const size_t line_end = bytes.find("\r\n", pos);
    if (line_end == std::string::npos) return std::nullopt;
    size_t size = 0;
    size_t i = pos;
    for (; i < line_end && hex_digit(bytes[i]) >= 0; ++i) {
      if (size > (size_t(1) << 40)) break;
      size = size * 16 + static_cast<size_t>(hex_digit(bytes[i]));
    }
    if (i == pos || size > (size_t(1) << 40) || (i < line_end && bytes[i] != ';' && bytes[i] != ' ')) {
      scan.malformed = true;
      return std::nullopt;
    }
    if (size == 0) {
      scan.resume = pos;
      // Trailer fields, if any, then an empty line.
      const size_t empty = bytes.find("\r\n\r\n", line_end);
      if (empty == std::string::npos) return std::nullopt;
      return empty + 4;
    }
    const size_t next = line_end + 2 + size + 2;
    if (bytes.size() < next) {
      scan.resume = pos;
      scan.pending = size;  // counted in body_bytes once it is whole
      return std::nullopt;
    }
    scan.body_bytes += size;
    scan.pending = 0;
    pos = next;
    scan.resume = pos;
  }
}

} // namespace pola::serve
