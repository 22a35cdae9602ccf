// IDX files (the MNIST / Fashion-MNIST container): a 4-byte magic 0x00 0x00
// <type> <ndim>, ndim big-endian uint32 dimensions, then the row-major data.
// Only unsigned bytes (type 0x08) are read; gzip-compressed files (.gz) are
// decompressed transparently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pola::eval {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data; // product(dims) bytes
};

// Throws pola::InputError naming the file for anything malformed.
IdxArray read_idx_u8(const std::string &path);

} // namespace pola::eval
