// Shared test helpers: the ISAs to test, seeded random data, strided buffers.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernels.h"

namespace pola::test {

constexpr double kEps32 = std::numeric_limits<float>::epsilon();

// Tables of every ISA this machine runs (scalar always first).
inline std::vector<const kernels::KernelTable *> available_tables() {
  std::vector<const kernels::KernelTable *> out;
  for (auto isa : {kernels::Isa::scalar, kernels::Isa::avx2, kernels::Isa::avx512})
    if (auto *t = kernels::table_for(isa)) out.push_back(t);
  return out;
}

// Base seed: POLA_TEST_SEED replays a failure; tests print the seed they used.
inline uint64_t base_seed() {
  const char *s = std::getenv("POLA_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20250115u;
}

// A rows x cols matrix stored with stride ld >= cols; the gaps hold NaN so a
// kernel that reads past a row's width poisons its output.
struct Strided {
  int64_t rows, cols, ld;
  std::vector<float> data;
  Strided(int64_t r, int64_t c, int64_t extra)
      : rows(r), cols(c), ld(c + extra),
        data(size_t(r * (c + extra)), std::numeric_limits<float>::quiet_NaN()) {}
  float &at(int64_t r, int64_t c) { return data[size_t(r * ld + c)]; }
  float at(int64_t r, int64_t c) const { return data[size_t(r * ld + c)]; }
};

// Uniform in [lo, hi), with a fraction of exact zeros.
inline void fill(Strided &m, std::mt19937_64 &rng, float lo, float hi, double zero_frac = 0.0) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::uniform_real_distribution<double> z(0.0, 1.0);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) m.at(r, c) = z(rng) < zero_frac ? 0.0f : u(rng);
}

} // namespace pola::test
