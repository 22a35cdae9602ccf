// Tiny encoders for test fixtures: PNG (any bit depth / colour type, stored
// deflate blocks, real CRCs), BMP (24-bit), binary PGM/PPM. They let the
// decoder tests build every file kind they need with known pixel values,
// without checked-in binaries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pola::test {

using Bytes = std::vector<uint8_t>;

// `samples` holds height rows of width * channels(color_type) samples, each
// sample one byte (bit_depth <= 8; sub-byte depths are packed here) or two
// big-endian bytes (bit_depth 16). `palette` is RGB triples for color_type 3;
// `trns` is written as a tRNS chunk when not empty.
Bytes encode_png(int width, int height, int bit_depth, int color_type, const std::vector<uint16_t> &samples,
                 const Bytes &palette = {}, const Bytes &trns = {});

// 24-bit bottom-up BMP from top-down RGB bytes.
Bytes encode_bmp_rgb(int width, int height, const Bytes &rgb);

// Binary PNM: "P5" (channels 1) or "P6" (channels 3) with the given maxval;
// samples are written as 1 byte (maxval < 256) or 2 big-endian bytes.
Bytes encode_pnm(int width, int height, int channels, int maxval, const std::vector<uint16_t> &samples);

// A PNG header (signature + IHDR) claiming the given size, with no image data.
Bytes png_header_only(uint32_t width, uint32_t height);

void write_file(const std::string &path, const Bytes &bytes);
std::string temp_path(const std::string &name); // unique per test process

} // namespace pola::test
