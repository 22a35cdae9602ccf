#include "engine/preprocess/preprocess_batch.h"

#include <algorithm>
#include <exception>
#include <vector>

namespace pola::preprocess {

void preprocess_batch(int count, const std::function<ImageU8(int)> &load, const PreprocessSpec &spec, int threads,
                      float *out, int *failed) {
  if (failed) *failed = -1;
  if (count <= 0) return;
  spec.validate(); // once, before any decode
  const size_t per_image = size_t(spec.channels) * spec.crop * spec.crop;
  // One slot per image: exceptions must not leave an OpenMP region, and the lowest
  // failing image is reported whatever the schedule.
  std::vector<std::exception_ptr> errors(static_cast<size_t>(count));
#pragma omp parallel for num_threads(std::max(1, std::min(threads, count))) schedule(dynamic)
  for (int i = 0; i < count; ++i) {
    try {
      const std::vector<float> x = preprocess_image(load(i), spec);
      std::copy(x.begin(), x.end(), out + size_t(i) * per_image);
    } catch (...) {
      errors[size_t(i)] = std::current_exception();
    }
  }
  for (int i = 0; i < count; ++i)
    if (errors[size_t(i)]) {
      if (failed) *failed = i;
      std::rethrow_exception(errors[size_t(i)]);
    }
}

} // namespace pola::preprocess
