// Plain-words decoding errors; see decode_problem.h. The codes are those of
// stb_image 2.27 built without STBI_FAILURE_USERMSG (its user messages are
// vaguer: every PNG problem is just "Corrupt PNG", truncation included).
#include "engine/preprocess/decode_problem.h"

#include <cstring>

namespace pola::preprocess {
namespace {

bool starts_with(const uint8_t *data, size_t size, const char *magic, size_t n) {
  return size >= n && std::memcmp(data, magic, n) == 0;
}

bool code_is(const char *code, const char *what) { return std::strcmp(code, what) == 0; }

// What decode_image reads (stb_image's formats; PNM through decode_pnm).
constexpr const char *kSupportedFormats = "JPEG, PNG, BMP, GIF, TGA, PSD, PNM, HDR";

// Codes that mean the data ends before the image does.
bool means_truncated(const char *code) {
  for (const char *c : {"outofdata", "read past buffer", "not enough pixels", "bad file", "no IDAT"})
    if (code_is(code, c)) return true;
  return false;
}

// Codes of valid files in a variant the decoder does not read, with what that variant is.
const char *unsupported_variant(const char *code) {
  struct Variant {
    const char *code, *words;
  };
  static constexpr Variant kVariants[] = {
      {"BMP RLE", "RLE compression"},
      {"BMP JPEG/PNG", "embedded JPEG/PNG compression"},
      {"unknown BMP", "unknown header type"},
      {"only 8-bit", "12-bit samples"},
      {"no header height", "height given after the first scan (DNL marker)"},
      {"1/2/4/8/16-bit only", "sample depth other than 1, 2, 4, 8 or 16 bits"},
      {"bad bits_per_channel", "sample depth"},
      {"wrong version", "file version"},
      {"wrong channel count", "channel count"},
      {"wrong color format", "colour mode other than RGB"},
      {"unsupported bit depth", "bit depth other than 8 or 16"},
      {"max value > 65535", "maximum sample value above 65535"},
  };
  for (const auto &v : kVariants)
    if (code_is(code, v.code)) return v.words;
  return nullptr;
}

// A PNG whose chunk list runs off the end before IEND was cut short, whatever
// stb then complains about (for a file cut right after IHDR it reads a chunk
// of zero bytes and reports its empty name).
bool png_cut_short(const uint8_t *data, size_t size) {
  size_t at = 8;
  while (at + 8 <= size) {
    const uint32_t length = (uint32_t(data[at]) << 24) | (uint32_t(data[at + 1]) << 16) |
                            (uint32_t(data[at + 2]) << 8) | data[at + 3];
    if (std::memcmp(data + at + 4, "IEND", 4) == 0) return false;
    if (length > size - at - 8) return true;
    at += 12 + size_t(length);
  }
  return true;
}

// Only asked once decoding failed: a file that fails and lacks its format's
// end marker was most likely cut short, which says more than the code stb
// stumbled on after reading past the end.
bool cut_short(const std::string &format, const uint8_t *data, size_t size) {
  if (format == "PNG") return png_cut_short(data, size);
  if (format == "GIF") return data[size - 1] != 0x3B; // the trailer byte
  if (format == "JPEG") return size < 4 || data[size - 2] != 0xFF || data[size - 1] != 0xD9; // EOI
  return false;
}

// Image formats the decoder does not read at all, recognised by their
// signature so that the message names them instead of "unknown format".
const char *unsupported_format_of(const uint8_t *data, size_t size) {
  if (starts_with(data, size, "II*\0", 4) || starts_with(data, size, "MM\0*", 4)) return "TIFF";
  if (size >= 12 && starts_with(data, size, "RIFF", 4) && std::memcmp(data + 8, "WEBP", 4) == 0) return "WebP";
  if (size >= 12 && std::memcmp(data + 4, "ftyp", 4) == 0) {
    if (std::memcmp(data + 8, "avif", 4) == 0 || std::memcmp(data + 8, "avis", 4) == 0) return "AVIF";
    for (const char *brand : {"heic", "heix", "hevc", "heim", "heis", "mif1", "msf1"})
      if (std::memcmp(data + 8, brand, 4) == 0) return "HEIF";
  }
  if (starts_with(data, size, "\0\0\0\x0cjP  \r\n\x87\n", 12) || starts_with(data, size, "\xFF\x4F\xFF\x51", 4))
    return "JPEG 2000";
  if (starts_with(data, size, "\xFF\x0A", 2) || starts_with(data, size, "\0\0\0\x0cJXL \r\n\x87\n", 12))
    return "JPEG XL";
  if (starts_with(data, size, "\x76\x2F\x31\x01", 4)) return "OpenEXR";
  return nullptr;
}

} // namespace

std::string image_format_of(const uint8_t *data, size_t size) {
  if (starts_with(data, size, "\x89PNG\r\n\x1a\n", 8)) return "PNG";
  if (starts_with(data, size, "\xFF\xD8", 2)) return "JPEG";
  if (starts_with(data, size, "GIF8", 4)) return "GIF";
  if (starts_with(data, size, "BM", 2)) return "BMP";
  if (starts_with(data, size, "8BPS", 4)) return "PSD";
  if (starts_with(data, size, "#?RADIANCE", 10) || starts_with(data, size, "#?RGBE", 6)) return "HDR";
  if (starts_with(data, size, "\x53\x80\xF6\x34", 4)) return "PIC";
  if (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6') return "PNM";
  return "";
}

std::string truncated_problem(const std::string &format) {
  return "truncated " + format + " data (the file ends too early)";
}

std::string decode_problem(const char *stb_code, const uint8_t *data, size_t size) {
  const std::string format = image_format_of(data, size);
  const std::string what = format.empty() ? "image" : format;
  const char *code = stb_code ? stb_code : "";
  if (code_is(code, "unknown image type") || code_is(code, "not GIF") || code_is(code, "not BMP") ||
      code_is(code, "not PSD") || code_is(code, "bad png sig")) {
    if (!format.empty()) return "corrupt " + format + " header";
    if (const char *other = unsupported_format_of(data, size))
      return std::string("a ") + other + " image, a format that is not supported (supported: " + kSupportedFormats +
             "); convert it to PNG or JPEG";
    return "not an image file (unknown format)";
  }
  if (means_truncated(code) || cut_short(format, data, size)) return truncated_problem(what);
  if (code_is(code, "outofmem")) return "out of memory while decoding the " + what;
  if (code_is(code, "too large")) return what + " too large to decode";
  if (const char *variant = unsupported_variant(code)) return "unsupported " + what + " variant (" + variant + ")";
  if (!*code) return "corrupt " + what + " data";
  // Corrupt data. The code is kept in brackets: it is what tells two corrupt files apart in a bug report.
  return "corrupt " + what + " data (" + code + ")";
}

} // namespace pola::preprocess
