// Exact (erf) GELU against double std::erf on every ISA, lengths around the
// vector widths and a parallel-block boundary.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;

TEST_CASE("gelu matches erf GELU in double on every ISA") {
  uint64_t seed = pola::test::base_seed() + 600;
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(8), int64_t(17), int64_t(4097), int64_t(10000)}) {
    ++seed;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-8.0f, 8.0f);
    std::vector<float> x(size_t(n) + 1);
    for (auto &v : x) v = u(rng);
    x[0] = 0.0f;
    const float guard = x[size_t(n)];
    for (const pola::test::IsaKernels *t : pola::test::available_tables())
      for (int threads : {1, 2}) {
        CAPTURE(seed);
        INFO("isa=" << std::string(isa_name(t->isa)) << " threads=" << threads << " n=" << n);
        std::vector<float> y = x;
        t->gelu(y.data(), n, threads);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double xi = x[size_t(i)];
          const double want = 0.5 * xi * (1.0 + std::erf(xi / std::sqrt(2.0)));
          if (!(std::fabs(y[size_t(i)] - want) <= 8 * pola::test::kEps32 * std::fabs(xi) + 1e-38)) ++bad;
        }
        CHECK(bad == 0);
        CHECK(y[size_t(n)] == guard); // nothing past n is touched
      }
  }
}

TEST_CASE("gelu_bf16 is the table's gelu rounded by its to_bf16, bit for bit") {
  struct Shape { int64_t rows, cols; };
  const Shape shapes[] = {{1, 1}, {3, 7}, {9, 96}, {5, 333}, {64, 512}};
  uint64_t seed = pola::test::base_seed() + 620;
  for (const Shape &s : shapes) {
    std::mt19937_64 rng(++seed);
    std::uniform_real_distribution<float> u(-8.0f, 8.0f);
    const int64_t ld_x = s.cols + 3, ld_h = s.cols + 5;
    std::vector<float> x(size_t(s.rows * ld_x));
    for (auto &v : x) v = u(rng);
    for (const pola::test::IsaKernels *t : pola::test::available_tables())
      for (int threads : {1, 2}) {
        CAPTURE(seed);
        INFO("isa=" << std::string(isa_name(t->isa)) << " threads=" << threads << " cols=" << s.cols);
        std::vector<float> y = x;
        for (int64_t r = 0; r < s.rows; ++r) t->gelu(y.data() + r * ld_x, s.cols, 1);
        std::vector<uint16_t> want(size_t(s.rows * ld_h), 0xabcd), got(size_t(s.rows * ld_h), 0xabcd);
        t->to_bf16(y.data(), ld_x, want.data(), ld_h, s.rows, s.cols, 1);
        t->gelu_bf16(x.data(), ld_x, got.data(), ld_h, s.rows, s.cols, threads);
        CHECK(got == want); // padding included: both leave it untouched
      }
  }
}
