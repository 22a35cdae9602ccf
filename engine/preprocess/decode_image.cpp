// Image decoding through stb_image, with the PIL-compatibility rules listed in
// decode_image.h. This is the one translation unit that compiles stb_image:
// STB_IMAGE_STATIC keeps every stbi_* symbol private to this file, so another
// library in the process that also embeds stb_image cannot clash with it.
#include "engine/preprocess/decode_image.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "engine/preprocess/decode_pnm.h"
#include "engine/preprocess/decode_problem.h"
#include "engine/preprocess/gif_first_frame.h"
#include "engine/preprocess/rgb_to_grey.h"
#include "weights/error.h"
#include "weights/file_access.h"

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
// No STBI_FAILURE_USERMSG: stb's short codes ("outofdata") say more than its
// user messages ("Corrupt PNG"), and decode_problem.h words them for people.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#endif
#include <stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace pola::preprocess {
namespace {

[[noreturn]] void fail(const std::string &name, const std::string &what) { throw InputError(name + ": " + what); }

// Why stb just failed on `data`, in plain words.
std::string stb_problem(const uint8_t *data, size_t size) { return decode_problem(stbi_failure_reason(), data, size); }

struct StbFree {
  void operator()(void *p) const { stbi_image_free(p); }
};

bool starts_with(const uint8_t *data, size_t size, const char *magic) {
  const size_t n = std::strlen(magic);
  return size >= n && std::memcmp(data, magic, n) == 0;
}

bool is_png(const uint8_t *data, size_t size) { return starts_with(data, size, "\x89PNG\r\n\x1a\n"); }

// stb_image 2.27 (Debian's) trusts a JPEG's Huffman tables in two ways that
// the image fuzzer found, and this walk over the markers (skipping
// entropy-coded data) refuses both before stb sees the file:
// - counts of one table summing past 256 write beyond its 257-byte size list
//   and 256-byte value table (heap corruption; fixed upstream in 2.28);
// - a scan that decodes with a table no DHT has defined yet reads that
//   all-zero table past its maxcode array and indexes its values with a
//   negative symbol id.
// Returns what is wrong, or nullptr.
const char *jpeg_huffman_problem(const uint8_t *d, size_t size) {
  size_t pos = 0; // stb takes any run of 0xFF fill bytes before SOI's D8
  while (pos < size && d[pos] == 0xFF) ++pos;
  if (pos == 0 || pos >= size || d[pos] != 0xD8) return nullptr; // not a JPEG
  ++pos;
  auto byte = [&](size_t i) -> unsigned { return i < size ? d[i] : 0u; }; // stb reads 0 at EOF
  bool defined[2][4] = {};  // [DC, AC][table id]
  bool progressive = false; // from the frame header: which tables a scan uses
  while (pos + 4 <= size) {
    if (d[pos] != 0xFF) { ++pos; continue; } // entropy-coded data after SOS
    const uint8_t m = d[pos + 1];
    if (m == 0xFF || m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD8)) { pos += (m == 0xFF ? 1 : 2); continue; }
    if (m == 0xD9) return nullptr; // EOI
    const size_t len = (size_t(d[pos + 2]) << 8) | d[pos + 3];
    if (m == 0xC2) progressive = true;
    // DHT: tables back to back. Like stb, keep reading while the segment has
    // bytes left, even past its end or the file's.
    for (size_t t = pos + 4, end = pos + 2 + len; m == 0xC4 && t < end && t < size;) {
      size_t n = 0;
      for (size_t i = t + 1; i <= t + 16 && i < size; ++i) n += d[i];
      if (n > 256) return "corrupt JPEG data (a Huffman table has more than 256 codes)";
      const unsigned cls = d[t] >> 4, id = d[t] & 15;
      if (cls <= 1 && id <= 3) defined[cls][id] = true; // stb refuses other ids itself
      t += 17 + n;
    }
    if (m == 0xDA) { // SOS: the tables each component decodes with
      const size_t ns = byte(pos + 4), tail = pos + 5 + 2 * ns;
      const unsigned ss = byte(tail), ah = byte(tail + 2) >> 4;
      // Baseline scans use both; progressive DC first passes the DC table,
      // AC passes (first and refinement) the AC table, DC refinements none.
      const bool dc = !progressive || (ss == 0 && ah == 0), ac = !progressive || ss > 0;
      for (size_t c = 0; c < ns; ++c) {
        const unsigned td = byte(pos + 6 + 2 * c) >> 4, ta = byte(pos + 6 + 2 * c) & 15;
        if (td > 3 || ta > 3) return nullptr; // stb refuses the scan itself
        if ((dc && !defined[0][td]) || (ac && !defined[1][ta]))
          return "corrupt JPEG data (a scan uses a Huffman table that no DHT defined)";
      }
    }
    if (len < 2) return nullptr; // stb refuses the segment itself
    pos += 2 + len;
  }
  return nullptr;
}

// Width and height from a PNG's IHDR (which must be the first chunk).
bool png_ihdr_size(const uint8_t *data, size_t size, int *w, int *h) {
  if (!is_png(data, size) || size < 24 || std::memcmp(data + 12, "IHDR", 4) != 0) return false;
  auto be32 = [&](size_t at) {
    return (uint32_t(data[at]) << 24) | (uint32_t(data[at + 1]) << 16) | (uint32_t(data[at + 2]) << 8) | data[at + 3];
  };
  const uint32_t pw = be32(16), ph = be32(20);
  // Beyond INT_MAX is absurd anyway; report it as the largest int.
  *w = int(std::min<uint32_t>(pw, INT_MAX));
  *h = int(std::min<uint32_t>(ph, INT_MAX));
  return true;
}

// stb_image 2.27 passes a null buffer to memcpy (undefined behaviour, found
// by the image fuzzer) when the first IDAT chunk has length 0. Empty IDAT
// chunks are legal and carry nothing, so a copy without them decodes to the
// same pixels; each chunk has its own CRC, so nothing else changes. Returns
// an empty vector when there is nothing to drop (or the chunk list is broken,
// which stb then reports).
std::vector<uint8_t> png_without_empty_idat(const uint8_t *data, size_t size) {
  if (!is_png(data, size)) return {};
  std::vector<std::pair<size_t, size_t>> keep; // byte ranges to copy
  size_t at = 8, run_start = 0;
  bool dropped = false;
  while (at + 8 <= size) { // length and type present (the CRC may be cut off)
    const uint32_t length = (uint32_t(data[at]) << 24) | (uint32_t(data[at + 1]) << 16) |
                            (uint32_t(data[at + 2]) << 8) | data[at + 3];
    if (length == 0 && std::memcmp(data + at + 4, "IDAT", 4) == 0) {
      keep.emplace_back(run_start, at);
      run_start = std::min(size, at + 12);
      dropped = true;
    }
    if (length > size - at - 8) break;
    at += 12 + size_t(length);
  }
  if (!dropped) return {};
  keep.emplace_back(run_start, size);
  std::vector<uint8_t> out;
  out.reserve(size);
  for (const auto &r : keep) out.insert(out.end(), data + r.first, data + r.second);
  return out;
}

// Mode "I" -> RGB in PIL: each value clipped to 0..255 and replicated.
ImageU8 decode_grey16_clipped(const uint8_t *data, int len, const std::string &name) {
  int w = 0, h = 0, comp = 0;
  std::unique_ptr<stbi_us, StbFree> px(stbi_load_16_from_memory(data, len, &w, &h, &comp, 1));
  if (!px) fail(name, stb_problem(data, size_t(len)));
  ImageU8 out(w, h, 3);
  const size_t n = size_t(w) * h;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t v = px.get()[i] > 255 ? 255 : static_cast<uint8_t>(px.get()[i]);
    out.pixels[3 * i] = out.pixels[3 * i + 1] = out.pixels[3 * i + 2] = v;
  }
  return out;
}

} // namespace

ImageU8 decode_image_from_memory(const uint8_t *data, size_t size, const std::string &name, int channels,
                                 const DecodeLimits &limits) {
  if (channels != 1 && channels != 3) fail(name, "can only decode to 1 (grey) or 3 (RGB) channels");
  if (size == 0) fail(name, "the file is empty (0 bytes), not an image");
  if (size > static_cast<size_t>(INT_MAX)) fail(name, "image file larger than 2 GiB; too large to decode");
  const std::vector<uint8_t> cleaned = png_without_empty_idat(data, size);
  if (!cleaned.empty()) {
    data = cleaned.data();
    size = cleaned.size();
  }
  const int len = static_cast<int>(size);

  if (const char *problem = jpeg_huffman_problem(data, size)) fail(name, problem);

  // Header only: learn the size and refuse absurd ones before anything is
  // allocated for pixels.
  int w = 0, h = 0, comp = 0;
  // Every file with a PGM/PPM magic goes through our own parser, never stb:
  // stb_image 2.27's PNM reader overflows its buffer on some 16-bit headers it
  // accepts, such as digits straight after the magic (image fuzzer).
  const bool is_pnm = looks_like_binary_pnm(data, size);
  PnmHeader pnm;
  if (is_pnm) {
    pnm = parse_pnm_header(data, size, name);
    w = pnm.width;
    h = pnm.height;
  } else if (!stbi_info_from_memory(data, len, &w, &h, &comp)) {
    // stb refuses a PNG whose pixels would exceed 1 GiB with the same vague
    // "unknown type" as a text file; IHDR tells the real size, and the size
    // check below then says what is wrong. A PNG within the limits that stb
    // still refuses fails in the decode, with stb's reason.
    if (!png_ihdr_size(data, size, &w, &h)) fail(name, stb_problem(data, size));
  }
  if (w <= 0 || h <= 0) fail(name, "image has an empty size " + std::to_string(w) + "x" + std::to_string(h));
  if (w > limits.max_side || h > limits.max_side || int64_t(w) * h > limits.max_pixels)
    fail(name, "image claims to be " + std::to_string(w) + "x" + std::to_string(h) +
                   " pixels; refusing anything wider or taller than " + std::to_string(limits.max_side) +
                   " or larger than " + std::to_string(limits.max_pixels) + " pixels");

  ImageU8 rgb;
  if (is_pnm) {
    rgb = decode_pnm_rgb(data, size, pnm, name);
  } else if (comp == 1 && stbi_is_16_bit_from_memory(data, len) && is_png(data, size)) {
    rgb = decode_grey16_clipped(data, len, name);
  } else {
    // GIF: 4 channels, because stb's alpha marks the pixels it left blank
    // that PIL paints (gif_first_frame.h). Everything else: asking stb for 3
    // channels drops alpha, replicates grey, expands palettes and keeps the
    // high byte of 16-bit samples, which are PIL's rules.
    GifFirstFrame gif;
    const bool fix_gif = read_gif_first_frame(data, size, &gif);
    const int want = fix_gif ? 4 : 3;
    int dw = 0, dh = 0, dcomp = 0;
    std::unique_ptr<stbi_uc, StbFree> px(stbi_load_from_memory(data, len, &dw, &dh, &dcomp, want));
    if (!px) fail(name, stb_problem(data, size));
    ImageU8 decoded(dw, dh, want);
    std::memcpy(decoded.pixels.data(), px.get(), decoded.pixels.size());
    rgb = fix_gif ? gif_rgba_to_pil_rgb(decoded, gif) : std::move(decoded);
  }
  if (rgb.width != w || rgb.height != h)
    fail(name, "decoded size " + std::to_string(rgb.width) + "x" + std::to_string(rgb.height) +
                   " differs from the header's " + std::to_string(w) + "x" + std::to_string(h));
  return channels == 1 ? rgb_to_grey(rgb) : rgb;
}

ImageU8 decode_image(const std::string &path, int channels, const DecodeLimits &limits) {
  // A FIFO or device is refused at once (never read until it ends).
  const std::vector<uint8_t> bytes = weights::read_regular_file(path, INT_MAX);
  return decode_image_from_memory(bytes.data(), bytes.size(), path, channels, limits);
}

} // namespace pola::preprocess
