#include "engine/preprocess/gif_first_frame.h"

#include <cstring>

namespace pola::preprocess {
namespace {

int le16(const uint8_t *p) { return p[0] | (p[1] << 8); }

// Skips a chain of data sub-blocks (length byte, bytes; a 0 length ends it).
bool skip_sub_blocks(const uint8_t *data, size_t size, size_t *pos) {
  while (*pos < size) {
    const uint8_t n = data[(*pos)++];
    if (n == 0) return true;
    *pos += n;
  }
  return false;
}

} // namespace

bool is_gif(const uint8_t *data, size_t size) {
  return size >= 6 && (std::memcmp(data, "GIF87a", 6) == 0 || std::memcmp(data, "GIF89a", 6) == 0);
}

bool read_gif_first_frame(const uint8_t *data, size_t size, GifFirstFrame *out) {
  if (!is_gif(data, size) || size < 13) return false;
  std::vector<uint8_t> global_palette;
  const uint8_t screen_flags = data[10];
  size_t pos = 13;
  if (screen_flags & 0x80) {
    const size_t n = size_t(3) << ((screen_flags & 7) + 1);
    if (pos + n > size) return false;
    global_palette.assign(data + pos, data + pos + n);
    pos += n;
  }
  int transparent = -1;
  while (pos < size) {
    const uint8_t block = data[pos++];
    if (block == 0x21) { // extension: label, then sub-blocks
      if (pos >= size) return false;
      const uint8_t label = data[pos++];
      // Graphic control extension: 4 bytes; bit 0 of the flags = has transparency.
      if (label == 0xF9 && pos + 5 <= size && data[pos] == 4)
        transparent = (data[pos + 1] & 1) ? data[pos + 4] : -1;
      if (!skip_sub_blocks(data, size, &pos)) return false;
    } else if (block == 0x2C) { // image descriptor: the first frame
      if (pos + 9 > size) return false;
      out->left = le16(data + pos);
      out->top = le16(data + pos + 2);
      out->width = le16(data + pos + 4);
      out->height = le16(data + pos + 6);
      const uint8_t flags = data[pos + 8];
      pos += 9;
      if (flags & 0x80) {
        const size_t n = size_t(3) << ((flags & 7) + 1);
        if (pos + n > size) return false;
        out->palette.assign(data + pos, data + pos + n);
      } else {
        out->palette = global_palette;
      }
      out->transparent_index = transparent;
      return true;
    } else {
      return false; // trailer or garbage before any image
    }
  }
  return false;
}

ImageU8 gif_rgba_to_pil_rgb(const ImageU8 &rgba, const GifFirstFrame &frame) {
  auto colour = [&](int index, uint8_t *dst) {
    if (index >= 0 && size_t(index) * 3 + 2 < frame.palette.size()) {
      std::memcpy(dst, &frame.palette[size_t(index) * 3], 3);
    } else {
      std::memset(dst, 0, 3);
    }
  };
  uint8_t transparent_rgb[3], outside_rgb[3];
  colour(frame.transparent_index, transparent_rgb);
  colour(frame.transparent_index >= 0 ? frame.transparent_index : 0, outside_rgb);

  ImageU8 rgb(rgba.width, rgba.height, 3);
  for (int y = 0; y < rgba.height; ++y) {
    const uint8_t *s = rgba.row(y);
    uint8_t *d = rgb.row(y);
    const bool row_inside = y >= frame.top && y < frame.top + frame.height;
    for (int x = 0; x < rgba.width; ++x, s += 4, d += 3) {
      const bool inside = row_inside && x >= frame.left && x < frame.left + frame.width;
      if (!inside) {
        std::memcpy(d, outside_rgb, 3);
      } else if (s[3] == 0 && frame.transparent_index >= 0) {
        std::memcpy(d, transparent_rgb, 3); // stb left the transparent index blank
      } else {
        std::memcpy(d, s, 3);
      }
    }
  }
  return rgb;
}

} // namespace pola::preprocess
