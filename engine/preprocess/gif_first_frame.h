// Making stb_image's first GIF frame look like PIL's.
//
// Both decode the same indices, but they colour two kinds of pixel differently:
//   - pixels of the transparent index: PIL (mode "P", then convert('RGB'))
//     shows the palette colour of that index; stb leaves them as its blank
//     canvas (alpha 0, black).
//   - pixels of the logical screen outside the first frame's rectangle: PIL
//     fills them with the transparent index (or index 0 if there is none) and
//     so shows that palette colour; stb shows the background colour or black.
// This reads just enough of the GIF stream (screen descriptor, colour tables,
// the graphic control extension and descriptor of the first image) to repaint
// those pixels as PIL does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/preprocess/image_u8.h"

namespace pola::preprocess {

struct GifFirstFrame {
  int left = 0, top = 0, width = 0, height = 0; // frame rectangle on the screen
  int transparent_index = -1;                   // -1: no transparency
  std::vector<uint8_t> palette;                 // RGB triples the frame uses
};

bool is_gif(const uint8_t *data, size_t size);

// False if the stream is malformed before the first image starts (stb will
// then refuse it, or decode it without these fixes).
bool read_gif_first_frame(const uint8_t *data, size_t size, GifFirstFrame *out);

// `rgba` is stb's first frame (4 channels); returns PIL's RGB for it.
ImageU8 gif_rgba_to_pil_rgb(const ImageU8 &rgba, const GifFirstFrame &frame);

} // namespace pola::preprocess
