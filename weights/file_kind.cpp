#include "weights/file_kind.h"

#include <cstdint>
#include <cstring>

namespace pola::weights {
namespace {

bool starts_with(const unsigned char *bytes, size_t size, const char *magic, size_t n) {
  return size >= n && std::memcmp(bytes, magic, n) == 0;
}

// Text (a labels list, JSON, notes, a Git LFS pointer left in place of the
// file): the first bytes are UTF-8 with no control character other than tab,
// line breaks and form feed. A model file's first bytes are its little-endian
// header length, whose high bytes are 0, so real files never look like this.
bool looks_like_text(const unsigned char *bytes, size_t size) {
  const size_t n = size < 512 ? size : 512;
  if (n == 0) return false;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = bytes[i];
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') || c == 0x7f) return false;
      continue;
    }
    // A UTF-8 lead byte and its continuation bytes (a sequence cut by the
    // 512-byte window still counts).
    const size_t more = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
    if (more == 0) return false;
    for (size_t j = 1; j <= more && i + j < n; ++j)
      if ((bytes[i + j] & 0xc0) != 0x80) return false;
    i += more;
  }
  return true;
}

} // namespace

std::string known_non_model_file(const std::string &path, const unsigned char *b, size_t n) {
  // A safetensors layout (8-byte little-endian header length, then a JSON
  // object inside the file) is never another kind, whatever its first bytes.
  if (n > 8) {
    uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = header << 8 | b[i];
    if (header <= n - 8 && b[8] == '{') return "";
  }
  const std::string convert = "; convert it with `pola convert " + path + " -o MODEL.pola`";
  if (starts_with(b, n, "PK\x03\x04", 4))
    return "this is a PyTorch checkpoint (a torch.save zip archive), not a model file" + convert;
  // A pickle stream starts with PROTO (0x80) and a protocol number 2..5:
  // torch.save's legacy (pre-1.6) format, or a pickled state dict.
  if (n >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
    return "this is a Python pickle (a legacy torch.save checkpoint?), not a model file; re-save it with "
           "PyTorch >= 1.6 (torch.save) and convert that with `pola convert CHECKPOINT -o MODEL.pola`";
  if (starts_with(b, n, "\x93NUMPY", 6)) return "this is a NumPy array (.npy), not a model file";
  if (starts_with(b, n, "\x89PNG\r\n\x1a\n", 8)) return "this is a PNG image, not a model file";
  if (starts_with(b, n, "\xff\xd8\xff", 3)) return "this is a JPEG image, not a model file";
  if (starts_with(b, n, "GIF8", 4)) return "this is a GIF image, not a model file";
  if (starts_with(b, n, "BM", 2) && n >= 14) return "this looks like a BMP image, not a model file";
  if (starts_with(b, n, "\x1f\x8b", 2)) return "this is a gzip-compressed file, not a model file (decompress it first)";
  if (starts_with(b, n, "\x7f" "ELF", 4)) return "this is an executable (ELF), not a model file";
  if (n >= 8 && b[4] == 'f' && b[5] == 't' && b[6] == 'y' && b[7] == 'p') return "this is a video or HEIF image, not a model file";
  if (starts_with(b, n, "version https://git-lfs", 23))
    return "this is a Git LFS pointer, not the model file it stands for (fetch it with `git lfs pull`)";
  if (looks_like_text(b, n)) return "this is a text file, not a model file";
  return "";
}

} // namespace pola::weights
