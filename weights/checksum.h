// Checksums of model files (weights/FORMAT.md, format version 2): XXH3-64 from
// Debian's libxxhash (fast enough to verify every byte at load), written as 16
// lower-case hex digits. The header checksum covers the header text with its
// own value replaced by zeros, so it can live inside the header it protects.
#pragma once

#include <cstddef>
#include <string>

namespace pola::weights {

constexpr const char *kChecksumAlgorithm = "xxh3_64";
// The header's own checksum: the metadata key and the placeholder it holds
// while the checksum is computed.
constexpr const char *kHeaderChecksumKey = "header_checksum";
constexpr const char *kChecksumPlaceholder = "0000000000000000";

std::string checksum_hex(const void *data, size_t bytes);

// Where the 16 hex digits of `"header_checksum":"<hex>"` start in a header's
// JSON text, or std::string::npos when the key is absent; throws InputError
// (naming `path`) when it appears more than once or its value is malformed.
size_t header_checksum_position(const std::string &path, const std::string &header_text);

} // namespace pola::weights
