// safetensors checkpoints (any dtype; floating tensors converted to F32 on
// read). The header is validated by parse_safetensors_header against the
// real file size, so every read below stays inside the mapping.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "weights/checkpoint.h"
#include "weights/dtype_convert.h"
#include "weights/error.h"
#include "weights/file_access.h"
#include "weights/safetensors_header.h"

namespace pola::weights {
namespace {

class SafetensorsCheckpoint : public Checkpoint {
 public:
  explicit SafetensorsCheckpoint(const std::string &path) {
    path_ = path;
    container_ = "safetensors";
    int fd = open_regular_file(path);
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      ::close(fd);
      throw InputError(path + ": not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
    if (size_ > 0) {
      map_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map_ == MAP_FAILED) map_ = nullptr;
    }
    ::close(fd);
    if (!map_) throw InputError(path + ": cannot map the file");
    try {
      header_ = parse_safetensors_header(path, static_cast<const unsigned char *>(map_), size_);
    } catch (...) {
      munmap(map_, size_);
      throw;
    }
    metadata_ = header_.metadata;
    for (const auto &e : header_.entries) {
      CheckpointTensor ct;
      ct.name = e.name;
      ct.shape = e.shape;
      ct.dtype = e.dtype;
      ct.floating = is_floating_dtype(e.dtype);
      tensors_.push_back(std::move(ct));
    }
  }
  ~SafetensorsCheckpoint() override { munmap(map_, size_); }

  std::vector<float> read_f32(size_t index) override {
    const SafetensorsEntry &e = header_.entries.at(index);
    if (!is_floating_dtype(e.dtype))
      throw InputError(path_ + ": tensor '" + e.name + "' is stored as " + e.dtype + ", expected floating point");
    const unsigned char *base = static_cast<const unsigned char *>(map_) + header_.data_start + e.begin;
    std::vector<float> out(static_cast<size_t>(e.numel));
    if (e.dtype == "F32") {
      std::memcpy(out.data(), base, out.size() * 4);
    } else {
      for (int64_t i = 0; i < e.numel; ++i) out[i] = load_as_f32(base, e.dtype, i);
    }
    return out;
  }

 private:
  void *map_ = nullptr;
  uint64_t size_ = 0;
  SafetensorsHeader header_;
};

} // namespace

std::unique_ptr<Checkpoint> open_safetensors_checkpoint(const std::string &path) {
  return std::make_unique<SafetensorsCheckpoint>(path);
}

} // namespace pola::weights
