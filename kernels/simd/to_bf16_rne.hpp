// One float -> bf16 by round-to-nearest-even on its bits (and the exact way back), shared by the
// scalar reference and the per-ISA template (where the compiler vectorises
// the loop around it with the ISA's own integer instructions).
#pragma once

#include <cstdint>
#include <cstring>

namespace pola::kernels {

inline uint16_t bf16_rne(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  // A NaN could carry into the sign or exponent: keep it a quiet NaN instead.
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);
}

// bf16 bits -> float: exact (a bf16 is the upper half of a float).
inline float bf16_to_float(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace pola::kernels
