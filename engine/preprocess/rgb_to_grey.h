// PIL's convert('L') from RGB: ITU-R 601-2 luma in 16-bit fixed point,
//   L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16,
// i.e. 0.299/0.587/0.114 rounded to the nearest. (The tempting integer form
// R*299/1000 + G*587/1000 + B*114/1000 disagrees with PIL on ~9000 of the
// 2^24 colours; this one agrees on all of them, checked with Pillow 9.4.)
#pragma once

#include "engine/preprocess/image_u8.h"

namespace pola::preprocess {

ImageU8 rgb_to_grey(const ImageU8 &rgb);

} // namespace pola::preprocess
