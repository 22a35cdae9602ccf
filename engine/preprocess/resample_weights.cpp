#include "engine/preprocess/resample_weights.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pola::preprocess {

ResampleWeights make_resample_weights(int in_size, int out_size, const ResampleFilter &filter) {
  if (in_size <= 0 || out_size <= 0) throw std::invalid_argument("make_resample_weights: sizes must be positive");
  const double scale = double(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter.support * filter_scale;
  // Multiply by the reciprocal, as PIL does, rather than divide: the two can
  // differ in the last bit, and that can move a rounded fixed-point weight.
  const double inv_filter_scale = 1.0 / filter_scale;

  ResampleWeights rw;
  rw.out_size = out_size;
  rw.taps = int(std::ceil(support)) * 2 + 1; // widest window any output can need
  rw.first.resize(out_size);
  rw.count.resize(out_size);
  rw.coeffs.assign(size_t(out_size) * rw.taps, 0);

  std::vector<double> w(rw.taps);
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    // int() truncates toward zero like PIL's C cast; negatives clamp to 0 anyway.
    const int first = std::max(int(center - support + 0.5), 0);
    const int last = std::min(int(center + support + 0.5), in_size);
    const int count = std::min(last - first, rw.taps);
    double sum = 0.0;
    for (int j = 0; j < count; ++j) {
      w[j] = filter.weight((first + j - center + 0.5) * inv_filter_scale);
      sum += w[j];
    }
    int32_t *k = &rw.coeffs[size_t(i) * rw.taps];
    for (int j = 0; j < count; ++j) {
      const double normalized = sum != 0.0 ? w[j] / sum : w[j];
      const double fixed = normalized * (1 << kResamplePrecisionBits);
      k[j] = static_cast<int32_t>(fixed < 0 ? fixed - 0.5 : fixed + 0.5);
    }
    rw.first[i] = first;
    rw.count[i] = count;
  }
  return rw;
}

} // namespace pola::preprocess
