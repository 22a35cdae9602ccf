// What is wrong with an image file that cannot be decoded, in plain words:
// "not an image file (unknown format)", "truncated PNG data", "unsupported
// BMP variant (RLE compression)". Every decoding error message of
// decode_image.cpp is worded here, so users never see the decoding library's
// name or its terse internal codes ("bad huffman code") without context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pola::preprocess {

// The format the first bytes announce ("PNG", "JPEG", ...), or "" when they
// announce none (TGA has no signature, so it is "" too).
std::string image_format_of(const uint8_t *data, size_t size);

// The problem stb_image reported with `stb_code` (its short internal reason,
// e.g. "outofdata"; may be null) for the encoded image `data`, in plain words.
std::string decode_problem(const char *stb_code, const uint8_t *data, size_t size);

// "truncated PNG data (...)": for our own decoders (decode_pnm.h) too.
std::string truncated_problem(const std::string &format);

} // namespace pola::preprocess
