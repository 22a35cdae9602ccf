// Helpers shared by the weights tests: scratch files that clean up after themselves.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace pola::test {

// A unique path under the build's temp dir, removed when the object dies.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string &suffix = ".bin") {
    static int counter = 0;
    const char *dir = std::getenv("TMPDIR");
    path_ = std::string(dir ? dir : "/tmp") + "/pola_weights_test_" + std::to_string(getpid()) + "_" +
            std::to_string(counter++) + suffix;
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile &) = delete;
  ScratchFile &operator=(const ScratchFile &) = delete;
  const std::string &path() const { return path_; }
  void write(const std::string &bytes) const {
    std::ofstream f(path_, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::string read() const {
    std::ifstream f(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

 private:
  std::string path_;
};

inline bool file_exists(const std::string &p) { return access(p.c_str(), F_OK) == 0; }

inline std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

} // namespace pola::test
