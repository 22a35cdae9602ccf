#include "engine/calibration.h"

#include <algorithm>
#include <cmath>

namespace pola {

void CalibrationRecorder::record(const std::string &prefix, const float *x, int64_t rows, int64_t cols, int64_t ld) {
  float m = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, std::fabs(x[r * ld + c]));
  std::lock_guard<std::mutex> lock(mutex_);
  float &slot = max_abs_[prefix];
  slot = std::max(slot, m);
}

std::map<std::string, float> CalibrationRecorder::max_abs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_abs_;
}

} // namespace pola
