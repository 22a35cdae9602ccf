// Validation of a safetensors header (8-byte LE length + JSON table), shared by
// the model file reader (F32, BF16 and I8) and the checkpoint converter (any dtype).
// Every entry is checked against the real file size before anyone reads data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pola::weights {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;           // e.g. "F32", "BF16", "I64"
  size_t dtype_size = 0;       // bytes per element
  std::vector<int64_t> shape;  // validated: non-negative, product fits int64
  int64_t numel = 0;
  uint64_t begin = 0, end = 0; // relative to the data area; end - begin == numel * dtype_size
};

struct SafetensorsHeader {
  uint64_t data_start = 0; // 8 + header length
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsEntry> entries; // in file (header text) order
};

// Bytes per element of a safetensors dtype name; 0 when unknown.
size_t safetensors_dtype_size(const std::string &dtype);

// Parses and validates the header of a file whose `size` bytes are at `bytes`.
// `path` is only used in error messages. Throws pola::InputError.
SafetensorsHeader parse_safetensors_header(const std::string &path, const unsigned char *bytes, uint64_t size);

} // namespace pola::weights
