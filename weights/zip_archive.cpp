// libzip wrapper. torch.save stores every entry uncompressed; compressed
// entries are accepted with a bounded expansion ratio so that a small file
// cannot make us allocate gigabytes it merely claims to contain.
#include "weights/zip_archive.h"

#include <sys/stat.h>
#include <zip.h>

#include <memory>

#include "weights/error.h"
#include "weights/zip_library.h"

namespace pola::weights {
namespace {

// Deflate can reach ~1000:1 on constant data, but real weights barely
// compress; anything beyond this ratio is treated as a zip bomb.
constexpr uint64_t kMaxCompressionRatio = 16;

} // namespace

ZipArchive::ZipArchive(const std::string &path) : path_(path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path + ": cannot open: no such file or not readable");
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": not a regular file");
  file_size_ = static_cast<uint64_t>(st.st_size);
  const ZipLibrary &z = zip_library();
  int err = 0;
  zip_ = z.open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!zip_) {
    zip_error_t ze;
    z.error_init_with_code(&ze, err);
    std::string msg = z.error_strerror(&ze);
    z.error_fini(&ze);
    throw InputError(path + ": not a readable zip archive (" + msg + ")");
  }
}

// An entry may not claim more bytes than the archive could really hold:
// stored entries no more than the file, compressed ones a bounded ratio.
void ZipArchive::check_plausible(const std::string &name, const zip_stat_t &sb) const {
  const uint64_t want = sb.valid & ZIP_STAT_SIZE ? sb.size : 0;
  const uint64_t comp = sb.valid & ZIP_STAT_COMP_SIZE ? sb.comp_size : file_size_;
  const bool stored = (sb.valid & ZIP_STAT_COMP_METHOD) && sb.comp_method == ZIP_CM_STORE;
  const uint64_t plausible = stored ? file_size_ : comp * kMaxCompressionRatio + (1u << 20);
  if (want > plausible || comp > file_size_)
    throw InputError(path_ + ": archive entry '" + name + "' claims " + std::to_string(want) +
                     " bytes, implausible for a " + std::to_string(file_size_) + "-byte file (corrupt archive?)");
}

ZipArchive::~ZipArchive() {
  if (zip_) zip_library().discard(zip_);
}

std::vector<std::string> ZipArchive::entry_names() const {
  std::vector<std::string> names;
  const ZipLibrary &z = zip_library();
  zip_int64_t n = z.get_num_entries(zip_, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char *name = z.get_name(zip_, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
    if (name) names.emplace_back(name);
  }
  return names;
}

int64_t ZipArchive::locate(const std::string &name) const {
  return zip_library().name_locate(zip_, name.c_str(), ZIP_FL_ENC_RAW);
}

bool ZipArchive::has(const std::string &name) const { return locate(name) >= 0; }

uint64_t ZipArchive::entry_size(const std::string &name) const {
  zip_int64_t idx = locate(name);
  if (idx < 0) throw InputError(path_ + ": archive has no entry '" + name + "'");
  const ZipLibrary &z = zip_library();
  zip_stat_t sb;
  z.stat_init(&sb);
  if (z.stat_index(zip_, static_cast<zip_uint64_t>(idx), 0, &sb) != 0 || !(sb.valid & ZIP_STAT_SIZE))
    throw InputError(path_ + ": cannot read the size of archive entry '" + name + "'");
  check_plausible(name, sb);
  return sb.size;
}

void ZipArchive::read(const std::string &name, std::vector<unsigned char> *out, uint64_t max_bytes) const {
  zip_int64_t idx = locate(name);
  if (idx < 0) throw InputError(path_ + ": archive has no entry '" + name + "'");
  const ZipLibrary &z = zip_library();
  zip_stat_t sb;
  z.stat_init(&sb);
  if (z.stat_index(zip_, static_cast<zip_uint64_t>(idx), 0, &sb) != 0)
    throw InputError(path_ + ": cannot stat archive entry '" + name + "'");
  const uint64_t want = sb.valid & ZIP_STAT_SIZE ? sb.size : 0;
  if ((sb.valid & ZIP_STAT_ENCRYPTION_METHOD) && sb.encryption_method != ZIP_EM_NONE)
    throw InputError(path_ + ": archive entry '" + name + "' is encrypted");
  if (want > max_bytes)
    throw InputError(path_ + ": archive entry '" + name + "' is " + std::to_string(want) + " bytes, more than the " +
                     std::to_string(max_bytes) + " allowed for it");
  check_plausible(name, sb);
  out->resize(want);
  read_into(name, out->data(), want);
}

void ZipArchive::read_into(const std::string &name, void *dst, uint64_t want) const {
  zip_int64_t idx = locate(name);
  if (idx < 0) throw InputError(path_ + ": archive has no entry '" + name + "'");
  if (want > file_size_ * kMaxCompressionRatio + (1u << 20))
    throw InputError(path_ + ": archive entry '" + name + "' is implausibly large");
  const ZipLibrary &z = zip_library();
  std::unique_ptr<zip_file_t, int (*)(zip_file_t *)> f(z.fopen_index(zip_, static_cast<zip_uint64_t>(idx), 0),
                                                        z.fclose);
  if (!f) throw InputError(path_ + ": cannot open archive entry '" + name + "': " + z.strerror(zip_));
  auto *out = static_cast<unsigned char *>(dst);
  uint64_t got = 0;
  while (got < want) {
    zip_int64_t r = z.fread(f.get(), out + got, want - got);
    if (r < 0) throw InputError(path_ + ": error reading archive entry '" + name + "': " + z.file_strerror(f.get()));
    if (r == 0) break;
    got += static_cast<uint64_t>(r);
  }
  if (got != want)
    throw InputError(path_ + ": archive entry '" + name + "' is truncated (" + std::to_string(got) + " of " +
                     std::to_string(want) + " bytes)");
}

} // namespace pola::weights
