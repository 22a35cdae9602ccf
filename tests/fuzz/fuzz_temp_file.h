// A scratch file the fuzz targets rewrite on every input, for code under test
// that reads paths (mmap'd model files, libzip archives, .npy readers). One
// file per process in /dev/shm when it exists (no disk traffic), removed at
// exit, so parallel fuzzing jobs never share one.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace pola::fuzz {

class TempFile {
 public:
  explicit TempFile(const std::string &suffix) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string tmpl = std::string(dir) + "/pola_fuzz_XXXXXX" + suffix;
    fd_ = mkstemps(tmpl.data(), static_cast<int>(suffix.size()));
    if (fd_ < 0) {
      std::perror("pola fuzz: mkstemps");
      std::abort();
    }
    path_ = tmpl;
  }
  ~TempFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  TempFile(const TempFile &) = delete;
  TempFile &operator=(const TempFile &) = delete;

  // Replaces the file's content with `size` bytes.
  void write(const uint8_t *data, size_t size) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
      ssize_t w = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (w <= 0) std::abort();
      done += static_cast<size_t>(w);
    }
  }
  const std::string &path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

} // namespace pola::fuzz
