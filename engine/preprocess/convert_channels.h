// PIL's Image.convert('RGB') / convert('L') for pixels that arrive already
// decoded (a caller's HWC array): grey is replicated to RGB, an alpha channel
// is dropped (PIL drops it, it does not composite), and RGB becomes grey by
// rgb_to_grey's luma. So an array from np.asarray(PIL.Image.open(f)) prepares
// exactly as the file f does.
#pragma once

#include "engine/preprocess/image_u8.h"

namespace pola::preprocess {

// `img.channels` is 1 (L), 2 (LA), 3 (RGB) or 4 (RGBA); `channels` is 1 or 3.
// Throws pola::InputError for any other count.
ImageU8 convert_channels(const ImageU8 &img, int channels);

} // namespace pola::preprocess
