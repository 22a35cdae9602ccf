// Writes small zip archives (stored entries) for checkpoint tests.
#pragma once

#include <zip.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pola::test {

inline void write_zip(const std::string &path, const std::vector<std::pair<std::string, std::string>> &entries) {
  int err = 0;
  zip_t *z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!z) throw std::runtime_error("zip_open failed");
  for (const auto &e : entries) {
    zip_source_t *src = zip_source_buffer(z, e.second.data(), e.second.size(), 0); // entries outlive zip_close
    zip_int64_t idx = zip_file_add(z, e.first.c_str(), src, ZIP_FL_OVERWRITE);
    if (idx < 0) throw std::runtime_error("zip_file_add failed");
    zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0);
  }
  if (zip_close(z) != 0) throw std::runtime_error("zip_close failed");
}

inline std::string floats_bytes(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * 4);
}

} // namespace pola::test
