// Finding NaN and Inf in float data: model weights at conversion and load,
// inputs and logits at run time (weights/FORMAT.md). One pass over the bits,
// no branches in the loop, so the compiler vectorises it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pola::weights {

struct NonFinite {
  size_t count = 0;
  size_t first = 0;  // index of the first non-finite value (when count > 0)
};

NonFinite find_nonfinite(const float *data, size_t n);
// The same for bf16 data (the upper halves of float32 values).
NonFinite find_nonfinite_bf16(const uint16_t *data, size_t n);

// "3 non-finite values (NaN or Inf), the first at index 17 (nan)" for messages.
std::string describe_nonfinite(const NonFinite &nf, const float *data);
std::string describe_nonfinite_bf16(const NonFinite &nf, const uint16_t *data);

} // namespace pola::weights
