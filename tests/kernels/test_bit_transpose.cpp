#include <doctest/doctest.h>

#include <cstdint>
#include <random>

#include "kernels/bit_transpose.h"

using pola::kernels::transpose_bits64;

TEST_CASE("transpose_bits64 moves bit (r, c) to (c, r)") {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 20; ++trial) {
    uint64_t a[64], in[64];
    for (int r = 0; r < 64; ++r) {
      // Sparse and dense rows, and the all-ones and all-zero patterns.
      in[r] = trial == 0 ? ~0ull : trial == 1 ? 0 : trial % 2 ? rng() : rng() & rng() & rng();
      a[r] = in[r];
    }
    transpose_bits64(a);
    int wrong = 0;
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c) wrong += int((in[r] >> c) & 1) != int((a[c] >> r) & 1);
    CHECK(wrong == 0);
    transpose_bits64(a); // an involution
    for (int r = 0; r < 64; ++r) CHECK(a[r] == in[r]);
  }
}

TEST_CASE("transpose_bits64 on a single bit and on the identity") {
  uint64_t a[64] = {};
  a[3] = uint64_t(1) << 60;
  transpose_bits64(a);
  for (int r = 0; r < 64; ++r) CHECK(a[r] == (r == 60 ? uint64_t(1) << 3 : 0));
  for (int r = 0; r < 64; ++r) a[r] = uint64_t(1) << r;
  transpose_bits64(a);
  for (int r = 0; r < 64; ++r) CHECK(a[r] == uint64_t(1) << r);
}
