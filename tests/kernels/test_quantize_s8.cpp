// Float -> int8 for the int8 GEMMs' sources, against an oracle in double:
// x / scale rounded to the nearer integer (ties to even), clamped to
// [-127, 127]. Exact ties, values past the clamp, ragged row ends and strided
// rows on every ISA; the bytes past each row's end stay untouched.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;

namespace {

int8_t oracle(float x, float scale) {
  const double q = double(x) / double(scale);
  const double lower = std::floor(q), frac = q - lower;
  double r = frac > 0.5 ? lower + 1 : frac < 0.5 ? lower : (std::fmod(lower, 2.0) == 0 ? lower : lower + 1);
  if (r > 127) r = 127;
  if (r < -127) r = -127;
  return static_cast<int8_t>(r);
}

} // namespace

TEST_CASE("quantize_s8 rounds x / scale to nearest even and clamps to [-127, 127] on every ISA") {
  std::mt19937_64 rng(pola::test::base_seed() + 950);
  std::uniform_real_distribution<float> u(-1.2f, 1.2f);
  const float scale = 0.0078125f; // 1/128: halves and the clamp are exact
  for (int64_t cols : {1, 7, 16, 33, 200}) {
    const int64_t rows = 5, ld_x = cols + 3, ld_y = cols + 5;
    std::vector<float> x(rows * ld_x);
    for (float &v : x) v = u(rng);
    // Exact ties of both parities, the clamp's edges and beyond.
    const float specials[] = {0.5f * scale, 1.5f * scale, -0.5f * scale, -2.5f * scale, 126.5f * scale,
                              127.5f * scale, -127.5f * scale, 1000.f, -1000.f, 0.f};
    for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]) && i < size_t(cols); ++i) x[i] = specials[i];
    for (const pola::test::IsaKernels *t : pola::test::available_tables())
      for (int threads : {1, 2}) {
        INFO("isa=" << std::string(isa_name(t->isa)) << " cols=" << cols << " threads=" << threads);
        std::vector<int8_t> y(rows * ld_y, int8_t(0x55));
        t->quantize_s8(x.data(), ld_x, y.data(), ld_y, rows, cols, scale, threads);
        int64_t bad = 0, touched = 0;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) bad += y[r * ld_y + c] != oracle(x[r * ld_x + c], scale);
          for (int64_t c = cols; c < ld_y; ++c) touched += y[r * ld_y + c] != int8_t(0x55);
        }
        CHECK(bad == 0);
        CHECK(touched == 0);
      }
  }
  // A scale that is not a power of two: the quotient itself rounds.
  std::vector<float> x(300);
  for (float &v : x) v = u(rng);
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    INFO("isa=" << std::string(isa_name(t->isa)));
    std::vector<int8_t> y(x.size());
    t->quantize_s8(x.data(), 300, y.data(), 300, 1, 300, 0.00731f, 1);
    int64_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i) bad += y[i] != oracle(x[i], 0.00731f);
    CHECK(bad == 0);
  }
}
