#include "weights/file_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "weights/error.h"

namespace pola::weights {
namespace {

std::string errno_text(int e = errno) { return std::strerror(e); }

const char *kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

class FdSink : public OutputSink {
 public:
  FdSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  void write(const void *data, size_t bytes) override {
    const char *p = static_cast<const char *>(data);
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, p, bytes);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail_in_file(path_, "write failed: " + errno_text(n < 0 ? errno : EIO));
      p += n;
      bytes -= static_cast<size_t>(n);
    }
  }

 private:
  int fd_;
  std::string path_;
};

// A special file (device, FIFO, socket) is written where it is.
void write_in_place(const std::string &path, const std::function<void(OutputSink &)> &fill) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail_in_file(path, "cannot open for writing: " + errno_text());
  try {
    FdSink sink(fd, path);
    fill(sink);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) fail_in_file(path, "close failed: " + errno_text());
}

// A regular or new file: a temporary sibling renamed over it when complete.
void write_replacing(const std::string &path, const std::function<void(OutputSink &)> &fill, mode_t mode) {
  std::string name = path + ".tmp.XXXXXX";
  int fd = mkstemp(name.data());
  if (fd < 0) fail_in_file(path, "cannot create a temporary file next to it: " + errno_text());
  try {
    FdSink sink(fd, path);
    fill(sink);
    // mkstemp creates 0600; an output is ordinary shared data (or keeps the
    // mode of the file it replaces).
    if (fchmod(fd, mode) != 0) fail_in_file(path, "chmod failed: " + errno_text());
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) fail_in_file(path, "close failed: " + errno_text());
    // No fsync: the rename makes the output appear complete or not at all;
    // durability across a power cut is not a goal for these tools.
    if (std::rename(name.c_str(), path.c_str()) != 0)
      fail_in_file(path, "cannot rename the temporary file into place: " + errno_text());
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(name.c_str());
    throw;
  }
}

} // namespace

int open_regular_file(const std::string &path) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail_in_file(path, "cannot open: " + errno_text());
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail_in_file(path, "cannot stat: " + errno_text(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_in_file(path, std::string("is ") + kind_of(st.st_mode) + ", not a regular file");
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::vector<unsigned char> read_regular_file(const std::string &path, uint64_t max_bytes) {
  const int fd = open_regular_file(path);
  std::vector<unsigned char> data;
  try {
    struct stat st {};
    if (fstat(fd, &st) != 0) fail_in_file(path, "cannot stat: " + errno_text());
    if (static_cast<uint64_t>(st.st_size) > max_bytes)
      fail_in_file(path, "file is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                     " this reader accepts");
    data.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail_in_file(path, "read failed: " + errno_text());
      if (n == 0) break;  // shrank while we read: take what is there
      done += static_cast<size_t>(n);
    }
    data.resize(done);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return data;
}

void require_regular_file(const std::string &path) { ::close(open_regular_file(path)); }

void write_output_file(const std::string &path, const std::function<void(OutputSink &)> &fill) {
  if (path.empty()) throw InputError("an output path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail_in_file(path, "cannot stat the output: " + errno_text());
    write_replacing(path, fill, 0644);
    return;
  }
  if (S_ISDIR(st.st_mode)) fail_in_file(path, "is a directory; name a file to write");
  if (S_ISREG(st.st_mode)) write_replacing(path, fill, st.st_mode & 07777);
  else write_in_place(path, fill);
}

void check_output_is_not_input(const std::string &output, const std::vector<std::string> &inputs) {
  struct stat out {};
  const bool out_exists = ::stat(output.c_str(), &out) == 0;
  std::error_code ec;
  const auto out_abs = std::filesystem::weakly_canonical(output, ec);
  for (const auto &in : inputs) {
    struct stat st {};
    // A device (/dev/null) may be both read and written by design; only files can be destroyed.
    const bool same_inode = out_exists && ::stat(in.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                            st.st_dev == out.st_dev && st.st_ino == out.st_ino;
    std::error_code ec2;
    const bool same_path = !ec && std::filesystem::weakly_canonical(in, ec2) == out_abs && !ec2;
    if (same_inode || same_path)
      throw InputError(output + ": the output is the input file " + in +
                       "; writing it would destroy the input (choose another output path)");
  }
}

} // namespace pola::weights
