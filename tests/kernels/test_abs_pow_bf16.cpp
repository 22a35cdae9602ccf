// abs_pow_bf16 (kernels/simd/abs_pow_bf16.hpp), the low-degree |u|^p of the
// bf16 core's feature maps, against double pow: relative error <= 2e-4 (its
// header states 1.2e-4 at p = 5; bf16 itself rounds at up to 2^-9 = 2e-3),
// and the edge cases of the fp32 abs_pow. The function is plain AVX-512
// under a target attribute, so this file is built for any x86-64 and runs the
// checks only where the CPU has AVX-512.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>

#include "helpers.h"
#include "kernels/registry.h"
#include "kernels/simd/abs_pow_bf16.hpp"

using namespace pola::kernels;
using pola::DType;

namespace {

// abs_pow_bf16 of 16 (u, p) pairs.
POLA_AVX512_TARGET void abs_pow_bf16_16(const float *u, const float *p, float *out) {
  _mm512_storeu_ps(out, simd::abs_pow_bf16(_mm512_loadu_ps(u), _mm512_loadu_ps(p)));
}

bool have_avx512() { return pola::test::runs_feature(pola::test::Feature::avx512); }

} // namespace

TEST_CASE("abs_pow_bf16 is within 2e-4 relative of pow(|u|, p), u in +-[2^-20, 2^6], p in [1, 5]") {
  if (!have_avx512()) return;
  std::mt19937_64 rng(pola::test::base_seed() + 2000);
  std::uniform_real_distribution<double> log_mag(-20.0, 6.0), pw(1.0, 5.0);
  double worst = 0;
  float u[16], p[16], got[16];
  for (int round = 0; round < 20000; ++round) {
    for (int i = 0; i < 16; ++i) {
      u[i] = float((i & 1 ? -1.0 : 1.0) * std::exp2(log_mag(rng)));
      p[i] = float(pw(rng));
    }
    if (round == 0) { // the mantissa interval's ends and 1 itself
      u[0] = 1.0f, u[1] = 0.75f, u[2] = -1.5f, u[3] = std::nextafter(1.5f, 0.0f), u[4] = 2.0f;
      p[0] = 5.0f, p[1] = 5.0f, p[2] = 5.0f, p[3] = 5.0f, p[4] = 1.0f;
    }
    abs_pow_bf16_16(u, p, got);
    for (int i = 0; i < 16; ++i) {
      const double want = std::pow(std::fabs(double(u[i])), double(p[i]));
      if (want < 1e-37) continue; // below FLT_MIN's neighbourhood (the fp32 range ends there)
      const double rel = std::fabs(double(got[i]) - want) / want;
      worst = std::max(worst, rel);
      if (rel > 2e-4) {
        INFO("u=" << u[i] << " p=" << p[i] << " got " << got[i] << " want " << want);
        REQUIRE(rel <= 2e-4);
      }
    }
  }
  MESSAGE("abs_pow_bf16 worst relative error " << worst);
}

TEST_CASE("abs_pow_bf16 edge cases: 0, subnormal, FLT_MIN, inf, large results") {
  if (!have_avx512()) return;
  const float inf = std::numeric_limits<float>::infinity();
  float u[16] = {0.0f, -0.0f, 1e-40f, -FLT_MIN, inf, -inf, 1e30f, 2.0f, 3.0f, 0.5f, 1.0f, -1.0f, 4.0f, 1e-10f, 8.0f, 0.25f};
  float p[16] = {2.0f, 3.0f, 1.5f, 1.0f, 2.0f, 1.0f, 5.0f, 1.0f, 2.0f, 3.0f, 4.5f, 2.5f, 0.5f, 1.0f, 3.0f, 2.0f};
  float got[16];
  abs_pow_bf16_16(u, p, got);
  CHECK(got[0] == 0.0f);
  CHECK(got[1] == 0.0f);
  CHECK(got[2] == 0.0f); // below FLT_MIN: 0, as abs_pow
  CHECK(got[3] == doctest::Approx(FLT_MIN).epsilon(2e-4));
  CHECK(got[4] == inf);
  CHECK(got[5] == inf);
  CHECK(got[6] == inf); // 1e150 overflows
  for (int i = 7; i < 16; ++i) {
    INFO("u=" << u[i] << " p=" << p[i]);
    CHECK(got[i] == doctest::Approx(std::pow(std::fabs(double(u[i])), double(p[i]))).epsilon(2e-4));
  }
}
