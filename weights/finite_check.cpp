#include "weights/finite_check.h"

#include <cmath>
#include <cstring>

#include "weights/dtype_convert.h"

namespace pola::weights {

NonFinite find_nonfinite(const float *data, size_t n) {
  NonFinite out;
  // Blocks keep the counting loop branch-free; only a block that holds a
  // non-finite value is searched again for its first index.
  constexpr size_t kBlock = 4096;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t end = start + kBlock < n ? start + kBlock : n;
    uint32_t bad = 0;
    for (size_t i = start; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, data + i, 4);
      bad += (bits & 0x7f800000u) == 0x7f800000u;  // exponent all ones: Inf or NaN
    }
    if (bad == 0) continue;
    if (out.count == 0)
      for (size_t i = start; i < end; ++i)
        if (!std::isfinite(data[i])) {
          out.first = i;
          break;
        }
    out.count += bad;
  }
  return out;
}

NonFinite find_nonfinite_bf16(const uint16_t *data, size_t n) {
  NonFinite out;
  for (size_t i = 0; i < n; ++i)
    if ((data[i] & 0x7f80u) == 0x7f80u) {  // exponent all ones: Inf or NaN
      if (out.count == 0) out.first = i;
      ++out.count;
    }
  return out;
}

std::string describe_nonfinite_bf16(const NonFinite &nf, const uint16_t *data) {
  const float first = bf16_to_f32(data[nf.first]);
  return std::to_string(nf.count) + " non-finite bf16 value" + (nf.count == 1 ? "" : "s") +
         " (NaN or Inf), the first at index " + std::to_string(nf.first) + " (" +
         (std::isnan(first) ? "nan" : first > 0 ? "inf" : "-inf") + ")";
}

std::string describe_nonfinite(const NonFinite &nf, const float *data) {
  return std::to_string(nf.count) + " non-finite value" + (nf.count == 1 ? "" : "s") + " (NaN or Inf), the first at index " +
         std::to_string(nf.first) + " (" + (std::isnan(data[nf.first]) ? "nan" : data[nf.first] > 0 ? "inf" : "-inf") + ")";
}

} // namespace pola::weights
