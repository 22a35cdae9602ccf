// Reading IDX files; see idx_file.h.
#include "idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <memory>

#include "weights/error.h"

namespace pola::eval {
namespace {

// Nothing in these datasets comes close; it bounds what a corrupt header can make us allocate.
constexpr int64_t kMaxBytes = int64_t(1) << 32;

struct GzCloser {
  void operator()(gzFile_s *f) const { gzclose(f); }
};

// gzread reads plain files unchanged, so one code path serves .gz and unpacked copies.
void read_exact(gzFile f, void *dst, int64_t n, const std::string &path) {
  auto *out = static_cast<uint8_t *>(dst);
  while (n > 0) {
    const unsigned chunk = unsigned(std::min<int64_t>(n, 1 << 30));
    const int got = gzread(f, out, chunk);
    if (got <= 0) throw InputError(path + ": IDX file is truncated or not valid gzip");
    out += got;
    n -= got;
  }
}

} // namespace

IdxArray read_idx_u8(const std::string &path) {
  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  if (!f) throw InputError(path + ": cannot open");
  uint8_t magic[4];
  read_exact(f.get(), magic, 4, path);
  if (magic[0] != 0 || magic[1] != 0) throw InputError(path + ": not an IDX file (bad magic)");
  if (magic[2] != 0x08) throw InputError(path + ": IDX element type is not unsigned byte");
  const int ndim = magic[3];
  if (ndim < 1 || ndim > 4) throw InputError(path + ": IDX rank " + std::to_string(ndim) + " is not 1..4");
  IdxArray a;
  int64_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    uint8_t b[4];
    read_exact(f.get(), b, 4, path);
    const int64_t d = (int64_t(b[0]) << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
    if (d > 0 && total > kMaxBytes / d) throw InputError(path + ": IDX dimensions are implausibly large");
    a.dims.push_back(d);
    total *= d;
  }
  a.data.resize(size_t(total));
  read_exact(f.get(), a.data.data(), total, path);
  uint8_t extra;
  if (gzread(f.get(), &extra, 1) != 0) throw InputError(path + ": IDX file has trailing bytes");
  return a;
}

} // namespace pola::eval
