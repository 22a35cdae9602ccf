// Float -> bf16 for the bf16 GEMMs' sources: round to nearest, ties to even,
// checked against an oracle that picks the nearer of the two neighbouring
// bf16 values in double precision (not the bit trick the kernel uses).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "helpers.h"
#include "kernels/registry.h"
#include "kernels/simd/to_bf16_rne.hpp"

using namespace pola::kernels;
using pola::DType;

namespace {

// The nearest bf16 of a finite float by distance; ties to the even one.
uint16_t oracle(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t down = uint16_t(u >> 16), up = uint16_t(down + 1); // towards zero / away from zero
  // Rounding up from the largest finite bf16 gives Inf, which IEEE places at 2^128 for this purpose.
  const double up_value = (up & 0x7fff) == 0x7f80 ? std::copysign(std::ldexp(1.0, 128), f) : double(bf16_to_float(up));
  const double d_down = std::fabs(double(f) - bf16_to_float(down)), d_up = std::fabs(up_value - f);
  if (d_down < d_up) return down;
  if (d_up < d_down) return up;
  return (down & 1) ? up : down;
}

} // namespace

TEST_CASE("to_bf16 rounds to nearest even on every ISA, strided, keeps NaN and Inf") {
  std::mt19937_64 rng(pola::test::base_seed() + 900);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  const int64_t rows = 7, cols = 83, ld_x = 90, ld_y = 88;
  std::vector<float> x(rows * ld_x);
  for (float &v : x) v = u(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);
  // Exact ties (halfway between two bf16 values), both parities, and the edges.
  const float specials[] = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -(1.0f + 1.0f / 256), 0.0f, -0.0f,
                            std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); ++i) x[i] = specials[i];
  const uint32_t carrying_nan = 0x7fffffff; // a NaN whose rounding would carry into the sign
  std::memcpy(&x[ld_x + 1], &carrying_nan, 4);
  for (const pola::test::IsaKernels *t : pola::test::available_tables())
    for (int threads : {1, 2}) {
      INFO("isa=" << std::string(isa_name(t->isa)) << " threads=" << threads);
      std::vector<uint16_t> y(rows * ld_y, 0xabcd);
      t->to_bf16(x.data(), ld_x, y.data(), ld_y, rows, cols, threads);
      int64_t bad = 0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const float f = x[r * ld_x + c];
          const uint16_t got = y[r * ld_y + c];
          if (std::isnan(f)) bad += !std::isnan(bf16_to_float(got));
          else if (std::isinf(f)) bad += bf16_to_float(got) != f;
          else bad += got != oracle(f);
        }
        for (int64_t c = cols; c < ld_y; ++c) bad += y[r * ld_y + c] != 0xabcd; // padding untouched
      }
      CHECK(bad == 0);
      CHECK(y[1] == 0x3f82);  // 1 + 3/256 (a tie) rounds up to the even 1 + 4/256
      CHECK(y[0] == 0x3f80);  // 1 + 1/256 rounds down to the even 1
      CHECK(std::isinf(bf16_to_float(y[5])));  // FLT_MAX is beyond bf16's largest finite value
    }
}
