#pragma once
// The one parallel decode + preprocess of a batch of images, shared by `pola eval`
// and the C API's pola_model_preprocess_batch (hence the Python binding): the images
// of a batch are decoded on the same OpenMP team that then runs the model, so no
// second set of threads competes with the team's (spinning) threads for the cores.
#include <functional>

#include "engine/preprocess/image_u8.h"
#include "engine/preprocess/preprocess.h"

namespace pola::preprocess {

// Preprocesses images 0..count-1 into `out` (count * channels * crop * crop floats),
// image i from load(i) (which decodes it; called from several threads at once), on
// `threads` OpenMP threads. If images fail, the exception of the lowest-numbered one
// is rethrown after every image was tried, whatever thread met it, and `*failed`
// (when given) holds its number; -1 when all succeed.
void preprocess_batch(int count, const std::function<ImageU8(int)> &load, const PreprocessSpec &spec, int threads,
                      float *out, int *failed = nullptr);

} // namespace pola::preprocess
