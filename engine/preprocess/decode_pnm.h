// Binary PGM/PPM ("P5"/"P6") decoded the way Pillow 9.4 does it.
//
// We do not use stb_image for these: stb 2.27 (Debian 12) reads 16-bit PNM
// samples in the wrong byte order, and it ignores maxval, whereas PIL rescales:
//   maxval 255 (or 65535 for grey): samples taken as they are;
//   otherwise: v' = min(out_max, round(v / maxval * out_max)) with Python's
//   round (half to even), out_max = 65535 for grey with maxval > 255 (PIL mode
//   "I"), else 255.
// Grey with maxval > 255 is mode "I", whose conversion to RGB/L clips at 255
// (see decode_image.h); colour samples are already 8-bit after the rescale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/preprocess/image_u8.h"

namespace pola::preprocess {

struct PnmHeader {
  int channels = 0; // 1 (P5) or 3 (P6)
  int width = 0;
  int height = 0;
  int maxval = 0;
  size_t data_offset = 0;
};

// True if `data` starts like a binary PGM or PPM.
bool looks_like_binary_pnm(const uint8_t *data, size_t size);

// Parses the header; throws pola::InputError naming `name` if it is malformed.
PnmHeader parse_pnm_header(const uint8_t *data, size_t size, const std::string &name);

// Decodes to 8-bit RGB with PIL's rules. The caller checks the header's size first.
ImageU8 decode_pnm_rgb(const uint8_t *data, size_t size, const PnmHeader &header, const std::string &name);

} // namespace pola::preprocess
