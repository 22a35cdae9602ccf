// What `pola quantize` learns from calibration images: for each linear layer
// that may run in int8, the largest |x| its input rows held. A model loaded
// with a recorder (ModelOptions::calibration) runs fp32 and adds one node
// before each such layer that folds its source rows into the record.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace pola {

class CalibrationRecorder {
 public:
  // Folds rows x cols values at stride ld into layer `prefix`'s record (thread-safe).
  void record(const std::string &prefix, const float *x, int64_t rows, int64_t cols, int64_t ld);
  // Layer prefix (`block1.0.attn.qg`) -> max |x| seen; every layer that may
  // run in int8 appears once a run has passed it.
  std::map<std::string, float> max_abs() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, float> max_abs_;
};

} // namespace pola
