#include "weights/file_access.h"
#include "heatmap_image.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "weights/error.h"

// The one translation unit of the tool that holds stb_image_write; static so
// its symbols cannot clash with another copy linked into the same program.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb_image_write.h>

namespace pola::attention_map {
namespace {

struct Rgb {
  double r, g, b;
};

// A dark-to-bright ramp (black-purple, red, orange, pale yellow): monotone in
// brightness, so the strongest weights stand out in colour and in grey.
Rgb ramp(double t) {
  static const Rgb stops[] = {{0.00, 0.00, 0.02}, {0.34, 0.06, 0.43}, {0.73, 0.21, 0.33},
                              {0.98, 0.55, 0.04}, {0.99, 1.00, 0.64}};
  constexpr int last = 4;
  t = std::clamp(t, 0.0, 1.0) * last;
  const int i = std::min(static_cast<int>(t), last - 1);
  const double f = t - i;
  return {stops[i].r + f * (stops[i + 1].r - stops[i].r), stops[i].g + f * (stops[i + 1].g - stops[i].g),
          stops[i].b + f * (stops[i + 1].b - stops[i].b)};
}

uint8_t to_u8(double v) { return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255.0)); }

} // namespace

RgbImage denormalise(const std::vector<float> &chw, int channels, int size, const std::vector<float> &mean,
                     const std::vector<float> &std) {
  RgbImage img;
  img.width = img.height = size;
  img.pixels.resize(static_cast<size_t>(size) * size * 3);
  const size_t plane = static_cast<size_t>(size) * size;
  for (size_t i = 0; i < plane; ++i)
    for (int c = 0; c < 3; ++c) {
      const int src = channels == 1 ? 0 : c;  // grey models: repeat the one plane
      img.pixels[i * 3 + c] = to_u8(chw[src * plane + i] * std[src] + mean[src]);
    }
  return img;
}

std::vector<double> upsample_bilinear(const std::vector<double> &map, int64_t side, int out) {
  std::vector<double> up(static_cast<size_t>(out) * out);
  const double step = static_cast<double>(side) / out;
  auto coord = [&](int i, int64_t &i0, int64_t &i1, double &f) {
    const double x = std::clamp((i + 0.5) * step - 0.5, 0.0, static_cast<double>(side - 1));
    i0 = static_cast<int64_t>(x);
    i1 = std::min(i0 + 1, side - 1);
    f = x - i0;
  };
  for (int y = 0; y < out; ++y) {
    int64_t y0, y1;
    double fy;
    coord(y, y0, y1, fy);
    for (int x = 0; x < out; ++x) {
      int64_t x0, x1;
      double fx;
      coord(x, x0, x1, fx);
      const double top = map[y0 * side + x0] * (1 - fx) + map[y0 * side + x1] * fx;
      const double bottom = map[y1 * side + x0] * (1 - fx) + map[y1 * side + x1] * fx;
      up[static_cast<size_t>(y) * out + x] = top * (1 - fy) + bottom * fy;
    }
  }
  return up;
}

ImageFormat output_format(const std::string &path) {
  const size_t slash = path.find_last_of('/'), dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return ImageFormat::png;
  std::string ext = path.substr(dot + 1);
  for (char &c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == "jpg" || ext == "jpeg") return ImageFormat::jpeg;
  for (const char *other : {"webp", "tif", "tiff", "bmp", "gif", "tga", "ppm", "pgm", "pnm", "heic", "heif", "avif",
                            "jxl", "jp2", "svg", "pdf", "eps", "ico", "exr", "hdr", "psd"})
    if (ext == other)
      throw InputError(path + ": attention maps are written as PNG (.png) or JPEG (.jpg, .jpeg), not ." + ext +
                       "; name the output one of those");
  return ImageFormat::png;
}

void write_overlay(const std::string &path, const RgbImage &base, const std::vector<double> &map_pixels, int qx,
                   int qy, int zoom) {
  const int W = base.width * zoom, H = base.height * zoom;
  const double top = std::max(1e-300, *std::max_element(map_pixels.begin(), map_pixels.end()));
  // Opacity grows with the weight: where the query does not look the image
  // stays readable, where it looks hardest the colour dominates.
  constexpr double kMinOpacity = 0.25, kMaxOpacity = 0.8;
  std::vector<uint8_t> out(static_cast<size_t>(W) * H * 3);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      const size_t src = static_cast<size_t>(y / zoom) * base.width + x / zoom;
      const double t = map_pixels[src] / top;
      const Rgb heat = ramp(t);
      const double colour[3] = {heat.r, heat.g, heat.b};
      const double opacity = kMinOpacity + (kMaxOpacity - kMinOpacity) * t;
      for (int c = 0; c < 3; ++c)
        out[(static_cast<size_t>(y) * W + x) * 3 + c] =
            to_u8((1 - opacity) * base.pixels[src * 3 + c] / 255.0 + opacity * colour[c]);
    }
  // The query: a cyan cross centred on its pixel, long enough to find at any zoom.
  const int cx = qx * zoom + zoom / 2, cy = qy * zoom + zoom / 2, arm = std::max(3, 2 * zoom);
  auto mark = [&](int x, int y) {
    if (x < 0 || y < 0 || x >= W || y >= H) return;
    uint8_t *p = &out[(static_cast<size_t>(y) * W + x) * 3];
    p[0] = 0, p[1] = 255, p[2] = 255;
  };
  for (int a = -arm; a <= arm; ++a) {
    mark(cx + a, cy);
    mark(cx, cy + a);
  }
  // Encoded in memory, then written by the project's one output rule (a
  // special file is written in place, every write is checked).
  std::string encoded;
  auto append = [](void *context, void *data, int size) {
    static_cast<std::string *>(context)->append(static_cast<const char *>(data), static_cast<size_t>(size));
  };
  if (output_format(path) == ImageFormat::jpeg) {
    // Quality above 90 makes stb keep full-resolution colour (no 4:2:0
    // subsampling), so the one-pixel cyan cross and the map's colours survive.
    if (!stbi_write_jpg_to_func(append, &encoded, W, H, 3, out.data(), 95))
      throw InputError(path + ": cannot encode the JPEG");
  } else if (!stbi_write_png_to_func(append, &encoded, W, H, 3, out.data(), W * 3)) {
    throw InputError(path + ": cannot encode the PNG");
  }
  weights::write_output_file(path, [&](weights::OutputSink &sink) { sink.write(encoded.data(), encoded.size()); });
}

} // namespace pola::attention_map
