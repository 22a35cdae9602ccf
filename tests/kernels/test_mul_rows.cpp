// The gate multiply on strided rows: exact (one fp32 multiply per element).
#include <doctest/doctest.h>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;
using pola::test::Strided;

TEST_CASE("mul_rows is an exact elementwise product on every ISA") {
  uint64_t seed = pola::test::base_seed() + 700;
  for (int64_t cols : {int64_t(1), int64_t(5), int64_t(16), int64_t(37), int64_t(320)}) {
    ++seed;
    std::mt19937_64 rng(seed);
    Strided y0(6, cols, 3), g(6, cols, 9);
    pola::test::fill(y0, rng, -4.0f, 4.0f, 0.1);
    pola::test::fill(g, rng, -4.0f, 4.0f, 0.1);
    for (const pola::test::IsaKernels *t : pola::test::available_tables())
      for (int threads : {1, 2}) {
        CAPTURE(seed);
        INFO("isa=" << std::string(isa_name(t->isa)) << " threads=" << threads << " cols=" << cols);
        Strided y = y0;
        for (int64_t r = 0; r < y.rows; ++r)
          for (int64_t c = cols; c < y.ld; ++c) y.at(r, c) = -12345.0f;
        t->mul_rows(y.data.data(), y.ld, g.data.data(), g.ld, y.rows, cols, threads);
        int64_t bad = 0;
        for (int64_t r = 0; r < y.rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) if (y.at(r, c) != y0.at(r, c) * g.at(r, c)) ++bad;
          for (int64_t c = cols; c < y.ld; ++c) if (y.at(r, c) != -12345.0f) ++bad;
        }
        CHECK(bad == 0);
      }
  }
}
