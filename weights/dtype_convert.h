// Element conversions to float32 for checkpoint dtypes (fp16, bf16, fp64).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace pola::weights {

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// float32 -> bf16 by round-to-nearest-even on the 16 dropped bits (what
// oneDNN's reorder and torch's .bfloat16() do). A NaN stays a (quiet) NaN; a
// finite value just below FLT_MAX may round to Inf, which callers check for.
inline uint16_t f32_to_bf16_rne(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu, u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13); // inf / nan
  } else if (exp != 0) {
    u = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    u = sign; // +-0
  } else { // subnormal: normalise
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while (!(man & 0x400u));
    u = sign | ((112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Reads element `i` of a little-endian array of `dtype` as float32.
// dtype is one of F32, F64, F16, BF16 (the caller checks).
inline float load_as_f32(const unsigned char *base, const std::string &dtype, int64_t i) {
  if (dtype == "F32") {
    float f;
    std::memcpy(&f, base + 4 * i, 4);
    return f;
  }
  if (dtype == "F64") {
    double d;
    std::memcpy(&d, base + 8 * i, 8);
    return static_cast<float>(d);
  }
  uint16_t h;
  std::memcpy(&h, base + 2 * i, 2);
  return dtype == "BF16" ? bf16_to_f32(h) : f16_to_f32(h);
}

inline bool is_floating_dtype(const std::string &d) { return d == "F32" || d == "F64" || d == "F16" || d == "BF16"; }

} // namespace pola::weights
