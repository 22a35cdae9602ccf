// torchvision.transforms.CenterCrop on a PIL image: the offset of the crop is
//   top = int(round((height - crop_height) / 2.0)), likewise left,
// with Python's round(), which rounds halves to even (15.5 -> 16, 16.5 -> 16).
#pragma once

#include "engine/preprocess/image_u8.h"

namespace pola::preprocess {

// The offset torchvision uses for a crop of `crop` out of `size` (crop <= size).
int center_crop_offset(int size, int crop);

// Throws std::invalid_argument if the crop is larger than the image
// (torchvision would pad; no model here asks for that).
ImageU8 center_crop(const ImageU8 &src, int crop_width, int crop_height);

} // namespace pola::preprocess
