// Read-only access to a zip archive (the container of torch.save files),
// wrapping libzip. Entry sizes claimed by the archive are bounded by the real
// file size before anything is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct zip;
struct zip_stat;

namespace pola::weights {

class ZipArchive {
 public:
  // Opens `path`; throws pola::InputError if it is not a readable zip file.
  explicit ZipArchive(const std::string &path);
  ~ZipArchive();
  ZipArchive(const ZipArchive &) = delete;
  ZipArchive &operator=(const ZipArchive &) = delete;

  const std::string &path() const { return path_; }
  std::vector<std::string> entry_names() const;
  bool has(const std::string &name) const;
  // Uncompressed size of an entry as the archive states it (checked on read).
  uint64_t entry_size(const std::string &name) const;
  // Reads a whole entry into `out` (resized). Refuses entries whose stated
  // size exceeds `max_bytes` or is implausible for the archive's size.
  void read(const std::string &name, std::vector<unsigned char> *out, uint64_t max_bytes) const;
  // Reads a whole entry of exactly `bytes` bytes into `dst` (the caller has
  // checked entry_size(name) == bytes); saves a copy for large tensors.
  void read_into(const std::string &name, void *dst, uint64_t bytes) const;

 private:
  int64_t locate(const std::string &name) const;
  void check_plausible(const std::string &name, const struct zip_stat &sb) const;
  std::string path_;
  uint64_t file_size_ = 0;
  struct zip *zip_ = nullptr;
};

} // namespace pola::weights
