#include "image_writers.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace pola::test {
namespace {

uint32_t crc32(const uint8_t *p, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_be32(Bytes &b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}
void put_le16(Bytes &b, uint32_t v) {
  b.push_back(uint8_t(v));
  b.push_back(uint8_t(v >> 8));
}
void put_le32(Bytes &b, uint32_t v) {
  put_le16(b, v & 0xffff);
  put_le16(b, v >> 16);
}

void put_chunk(Bytes &png, const char *type, const Bytes &data) {
  put_be32(png, uint32_t(data.size()));
  Bytes typed(type, type + 4);
  typed.insert(typed.end(), data.begin(), data.end());
  png.insert(png.end(), typed.begin(), typed.end());
  put_be32(png, crc32(typed.data(), typed.size()));
}

// zlib stream made of uncompressed ("stored") deflate blocks.
Bytes zlib_stored(const Bytes &raw) {
  Bytes z{0x78, 0x01};
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(raw.size() - pos, 65535);
    z.push_back(pos + n == raw.size() ? 1 : 0);
    put_le16(z, uint32_t(n));
    put_le16(z, uint32_t(~n & 0xffff));
    z.insert(z.end(), raw.begin() + pos, raw.begin() + pos + n);
    pos += n;
  } while (pos < raw.size());
  uint32_t a = 1, b = 0;
  for (uint8_t v : raw) {
    a = (a + v) % 65521;
    b = (b + a) % 65521;
  }
  put_be32(z, (b << 16) | a);
  return z;
}

int png_channels(int color_type) {
  switch (color_type) {
    case 0: return 1;
    case 2: return 3;
    case 3: return 1;
    case 4: return 2;
    case 6: return 4;
  }
  throw std::invalid_argument("bad PNG colour type");
}

Bytes png_ihdr(uint32_t w, uint32_t h, int depth, int color_type) {
  Bytes ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr.push_back(uint8_t(depth));
  ihdr.push_back(uint8_t(color_type));
  ihdr.push_back(0); // deflate
  ihdr.push_back(0); // adaptive filtering
  ihdr.push_back(0); // no interlace
  return ihdr;
}

const Bytes kPngSignature{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

} // namespace

Bytes encode_png(int width, int height, int bit_depth, int color_type, const std::vector<uint16_t> &samples,
                 const Bytes &palette, const Bytes &trns) {
  const int per_row = width * png_channels(color_type);
  if (samples.size() != size_t(per_row) * height) throw std::invalid_argument("encode_png: sample count");
  Bytes raw;
  for (int y = 0; y < height; ++y) {
    raw.push_back(0); // filter: none
    const uint16_t *s = &samples[size_t(y) * per_row];
    if (bit_depth == 16) {
      for (int i = 0; i < per_row; ++i) {
        raw.push_back(uint8_t(s[i] >> 8));
        raw.push_back(uint8_t(s[i]));
      }
    } else if (bit_depth == 8) {
      for (int i = 0; i < per_row; ++i) raw.push_back(uint8_t(s[i]));
    } else { // 1, 2, 4 bits: pack MSB first, pad the row to a byte
      int acc = 0, bits = 0;
      for (int i = 0; i < per_row; ++i) {
        acc = (acc << bit_depth) | s[i];
        bits += bit_depth;
        if (bits == 8) {
          raw.push_back(uint8_t(acc));
          acc = bits = 0;
        }
      }
      if (bits) raw.push_back(uint8_t(acc << (8 - bits)));
    }
  }
  Bytes png = kPngSignature;
  put_chunk(png, "IHDR", png_ihdr(width, height, bit_depth, color_type));
  if (!palette.empty()) put_chunk(png, "PLTE", palette);
  if (!trns.empty()) put_chunk(png, "tRNS", trns);
  put_chunk(png, "IDAT", zlib_stored(raw));
  put_chunk(png, "IEND", {});
  return png;
}

Bytes png_header_only(uint32_t width, uint32_t height) {
  Bytes png = kPngSignature;
  put_chunk(png, "IHDR", png_ihdr(width, height, 8, 2));
  return png;
}

Bytes encode_bmp_rgb(int width, int height, const Bytes &rgb) {
  const uint32_t stride = (uint32_t(width) * 3 + 3) & ~3u;
  const uint32_t data_size = stride * height;
  Bytes b{'B', 'M'};
  put_le32(b, 54 + data_size);
  put_le32(b, 0);
  put_le32(b, 54);
  put_le32(b, 40); // BITMAPINFOHEADER
  put_le32(b, uint32_t(width));
  put_le32(b, uint32_t(height)); // positive: bottom-up rows
  put_le16(b, 1);
  put_le16(b, 24);
  put_le32(b, 0); // BI_RGB
  put_le32(b, data_size);
  put_le32(b, 2835);
  put_le32(b, 2835);
  put_le32(b, 0);
  put_le32(b, 0);
  for (int y = height - 1; y >= 0; --y) {
    for (int x = 0; x < width; ++x) {
      const uint8_t *p = &rgb[(size_t(y) * width + x) * 3];
      b.push_back(p[2]);
      b.push_back(p[1]);
      b.push_back(p[0]);
    }
    for (uint32_t pad = uint32_t(width) * 3; pad < stride; ++pad) b.push_back(0);
  }
  return b;
}

Bytes encode_pnm(int width, int height, int channels, int maxval, const std::vector<uint16_t> &samples) {
  const std::string head = std::string(channels == 1 ? "P5" : "P6") + "\n" + std::to_string(width) + " " +
                           std::to_string(height) + "\n" + std::to_string(maxval) + "\n";
  Bytes b(head.begin(), head.end());
  for (uint16_t s : samples) {
    if (maxval > 255) b.push_back(uint8_t(s >> 8));
    b.push_back(uint8_t(s));
  }
  return b;
}

void write_file(const std::string &path, const Bytes &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string temp_path(const std::string &name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/pola_pre_test_" + std::to_string(getpid()) + "_" + name;
}

} // namespace pola::test
