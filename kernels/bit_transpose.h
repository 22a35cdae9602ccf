// Transposes a 64 x 64 bit matrix in place: row r's bit c (bit 0 = least
// significant) becomes row c's bit r. The attention key pass records sign
// bits per token (one row per token, one bit per channel) and needs them per
// channel (one bit per token) to list the tokens of each sign pattern.
#pragma once

#include <cstdint>

namespace pola::kernels {

// Recursive block swap: at each level the top-right and bottom-left blocks of
// every 2j x 2j tile trade places; six levels from j = 32 down to j = 1.
inline void transpose_bits64(uint64_t (&a)[64]) {
  static constexpr uint64_t kLowColumns[6] = {0x00000000FFFFFFFFull, 0x0000FFFF0000FFFFull,
                                              0x00FF00FF00FF00FFull, 0x0F0F0F0F0F0F0F0Full,
                                              0x3333333333333333ull, 0x5555555555555555ull};
  int level = 0;
  for (int j = 32; j > 0; j >>= 1, ++level) {
    const uint64_t low = kLowColumns[level];
    for (int k = 0; k < 64; ++k) {
      if (k & j) continue; // k is the top row of a pair (k, k + j)
      // Bits of row k in the high columns of each 2j group, against bits of
      // row k + j in the low columns: swap them.
      const uint64_t t = ((a[k] >> j) ^ a[k | j]) & low;
      a[k | j] ^= t;
      a[k] ^= t << j;
    }
  }
}

} // namespace pola::kernels
