// Decoding an image file into the 8-bit RGB (or grey) pixels PIL would give
// for `Image.open(f).convert('RGB')` (or `.convert('L')`).
//
// Every format stb_image reads is accepted (JPEG, PNG, BMP, GIF first frame,
// TGA, PSD, PNM, HDR, PIC). How each source kind becomes RGB, and why:
//   - RGBA, grey+alpha: alpha is dropped, not composited (PIL's convert does
//     the same);
//   - grey: replicated into R, G and B;
//   - palette (PNG, GIF, BMP): looked up; a transparent entry keeps its colour
//     (GIF needs help for that, see gif_first_frame.h);
//   - 16-bit PNG with colour or alpha: the high byte of each sample (PIL opens
//     these as RGB/RGBA through a "16B" raw mode that keeps the high byte);
//   - 16-bit grey PNG: PIL opens it in mode "I" (32-bit integers)
//     and its I->RGB / I->L conversion CLIPS values to 0..255, so almost every
//     pixel becomes white. We reproduce that on purpose: matching PIL is the
//     contract. (It is a PIL quirk, not a sensible conversion.)
// Grey output uses PIL's ITU-R 601-2 luma in 16-bit fixed point with rounding:
//   L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16
// which equals PIL's convert('L') for all 2^24 colours.
//
// Known differences from PIL (see engine/preprocess/README.md): JPEG (stb's
// IDCT, chroma upsampling and YCbCr rounding differ from libjpeg-turbo by a
// level here and there), CMYK JPEG, HDR/PIC (PIL cannot open them at all), plain (ASCII)
// PNM (stb cannot). Binary PGM/PPM are decoded by decode_pnm.h, not stb.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/preprocess/image_u8.h"

namespace pola::preprocess {

// Images larger than this are refused from the header alone, before any pixel
// memory is allocated: a crafted header must not make us allocate gigabytes.
struct DecodeLimits {
  int max_side = 32768;
  int64_t max_pixels = 200'000'000;
};

// `channels` is 3 (RGB) or 1 (grey). Throws pola::InputError naming `path`.
ImageU8 decode_image(const std::string &path, int channels = 3, const DecodeLimits &limits = {});

// Same, from an encoded image in memory; `name` is used in error messages.
ImageU8 decode_image_from_memory(const uint8_t *data, size_t size, const std::string &name, int channels = 3,
                                 const DecodeLimits &limits = {});

} // namespace pola::preprocess
