// Drawing an attention map over the image the model saw: the preprocessed
// input with its normalisation undone, the map upsampled bilinearly to the
// input size and coloured (dark purple = no weight, yellow = the map's
// maximum), the query marked with a cyan cross; written as PNG or JPEG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pola::attention_map {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // row-major RGB
};

// The model input (channels x size x size, normalised) back as 8-bit RGB.
RgbImage denormalise(const std::vector<float> &chw, int channels, int size, const std::vector<float> &mean,
                     const std::vector<float> &std);

// `map` (side x side cells) resampled to out x out, bilinear with pixel
// centres aligned (align_corners = false), edges clamped.
std::vector<double> upsample_bilinear(const std::vector<double> &map, int64_t side, int out);

// The format the output's name asks for: JPEG for .jpg / .jpeg (any case),
// PNG for .png and for names that name no image format (a special file such
// as /dev/stdout, a name without extension). Throws pola::InputError for
// another image format's extension (.webp, .tif, ...), before any work is done.
enum class ImageFormat { png, jpeg };
ImageFormat output_format(const std::string &path);

// Blends the map (scaled to its maximum) over `base`, marks pixel (qx, qy),
// enlarges everything `zoom` times (nearest) and writes it in
// output_format(path). Throws pola::InputError when the file cannot be written.
void write_overlay(const std::string &path, const RgbImage &base, const std::vector<double> &map_pixels, int qx,
                   int qy, int zoom);

} // namespace pola::attention_map
