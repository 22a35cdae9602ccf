#include "weights/checksum.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

// The library used header-only: no link dependency for the static package.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "weights/error.h"

namespace pola::weights {

std::string checksum_hex(const void *data, size_t bytes) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, static_cast<uint64_t>(XXH3_64bits(data, bytes)));
  return hex;
}

size_t header_checksum_position(const std::string &path, const std::string &text) {
  const std::string needle = std::string("\"") + kHeaderChecksumKey + "\":\"";
  const size_t at = text.find(needle);
  if (at == std::string::npos) return std::string::npos;
  if (text.find(needle, at + 1) != std::string::npos)
    throw InputError(path + ": the header names '" + kHeaderChecksumKey + "' more than once");
  const size_t digits = at + needle.size();
  if (digits + 17 > text.size() || text[digits + 16] != '"' ||
      text.find_first_not_of("0123456789abcdef", digits) < digits + 16)
    throw InputError(path + ": the header's '" + kHeaderChecksumKey + "' is not 16 hex digits");
  return digits;
}

} // namespace pola::weights
