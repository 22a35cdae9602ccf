// Swish x * sigmoid(x) against double on every ISA: lengths around the vector
// widths and a parallel-block boundary, saturating inputs, thread counts.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;

// Relative error 1e-6 (the kernels measure 1.7e-7 at worst over [-88, 88]).
// Below x ~ -88.4 xsimd's exp(-x) saturates to inf and the result to -0,
// where the true value is under 4e-37: hence an absolute floor.
constexpr double kFloor = 1e-36;

TEST_CASE("swish matches x * sigmoid(x) in double on every ISA") {
  uint64_t seed = pola::test::base_seed() + 1100;
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(8), int64_t(15), int64_t(16), int64_t(17), int64_t(4097),
                    int64_t(10000)}) {
    ++seed;
    std::mt19937_64 rng(seed);
    // The longest run spans the whole range where exp(-x) neither overflows nor vanishes.
    const float range = n == 10000 ? 95.0f : 20.0f;
    std::uniform_real_distribution<float> u(-range, range);
    std::vector<float> x(size_t(n) + 1);
    for (auto &v : x) v = u(rng);
    // Saturation and signed zeros, where a careless exp gives inf / inf.
    const float special[] = {-100.0f, 100.0f, 0.0f, -0.0f, -88.5f, 88.5f, -1e30f, 1e30f, -1e-30f, 1e-30f};
    for (size_t i = 0; i < sizeof special / sizeof *special && i < size_t(n); ++i) x[i * 7 % size_t(n)] = special[i];
    const float guard = x[size_t(n)];
    std::vector<float> ref;
    for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
      std::vector<float> y1 = x, y2 = x;
      t->swish(y1.data(), n, 1);
      t->swish(y2.data(), n, 2);
      CAPTURE(seed);
      INFO("isa=" << std::string(isa_name(t->isa)) << " n=" << n);
      CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
      CHECK(y1[size_t(n)] == guard); // nothing past n is touched
      int64_t bad = 0, bad_ref = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double xi = x[size_t(i)], got = y1[size_t(i)];
        const double want = xi / (1.0 + std::exp(-xi));
        if (!std::isfinite(got) || !(std::fabs(got - want) <= 1e-6 * std::fabs(want) + kFloor)) {
          if (bad < 5) MESSAGE("x=" << xi << " got " << got << " want " << want);
          ++bad;
        }
        if (!ref.empty() && !(std::fabs(got - ref[size_t(i)]) <= 1e-6 * std::fabs(ref[size_t(i)]) + kFloor))
          ++bad_ref;
      }
      CHECK(bad == 0);
      CHECK(bad_ref == 0); // against the scalar reference (the first table)
      if (ref.empty()) ref = y1;
    }
  }
}

TEST_CASE("swish: x = -100 gives a tiny non-positive value, x = +100 gives 100") {
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    INFO("isa=" << std::string(isa_name(t->isa)));
    float x[3] = {-100.0f, 100.0f, -1000.0f};
    t->swish(x, 3, 1);
    CHECK(x[0] <= 0.0f);
    CHECK(x[0] > -1e-30f);
    CHECK(x[1] == 100.0f);
    CHECK(x[2] <= 0.0f);
    CHECK(x[2] > -1e-30f);
  }
}
