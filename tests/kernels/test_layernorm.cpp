// LayerNorm against a double oracle on every ISA, including rows whose mean
// dwarfs their spread (where a one-pass E[x^2] - E[x]^2 would fail).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;
using pola::test::Strided;

namespace {
// A case's input rows (offset +- 1, row stride cols + 3) and its gamma, beta in [-2, 2].
struct LayerNormCase {
  Strided x;
  std::vector<float> gamma, beta;
  LayerNormCase(int64_t rows, int64_t cols, float offset, std::mt19937_64 &rng)
      : x(rows, cols, 3), gamma(size_t(cols)), beta(size_t(cols)) {
    pola::test::fill(x, rng, offset - 1.0f, offset + 1.0f, 0.02);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    for (auto &g : gamma) g = u(rng);
    for (auto &b : beta) b = u(rng);
  }
};
} // namespace

TEST_CASE("layernorm matches the double oracle on every ISA") {
  struct Shape { int64_t rows, cols; float offset; float eps; };
  const Shape shapes[] = {{1, 1, 0.0f, 1e-5f},   {3, 7, 0.5f, 1e-5f},    {17, 64, 0.0f, 1e-6f},
                          {9, 96, 300.0f, 1e-5f}, {5, 320, -40.0f, 1e-6f}, {4, 1000, 1000.0f, 1e-5f}};
  uint64_t seed = pola::test::base_seed() + 500;
  for (const Shape &s : shapes) {
    ++seed;
    std::mt19937_64 rng(seed);
    const LayerNormCase lc(s.rows, s.cols, s.offset, rng);
    const Strided &x = lc.x;
    const std::vector<float> &gamma = lc.gamma, &beta = lc.beta;
    for (const pola::test::IsaKernels *t : pola::test::available_tables())
      for (int threads : {1, 2}) {
        CAPTURE(seed);
        INFO("isa=" << std::string(isa_name(t->isa)) << " threads=" << threads << " rows=" << s.rows
                    << " cols=" << s.cols << " offset=" << s.offset);
        Strided y(s.rows, s.cols, 2);
        for (auto &v : y.data) v = -12345.0f;
        t->layernorm(x.data.data(), x.ld, y.data.data(), y.ld, s.rows, s.cols, gamma.data(), beta.data(),
                     s.eps, threads);
        int64_t bad = 0;
        for (int64_t r = 0; r < s.rows; ++r) {
          double mean = 0, var = 0, mag = 0;
          for (int64_t c = 0; c < s.cols; ++c) mean += x.at(r, c);
          mean /= double(s.cols);
          for (int64_t c = 0; c < s.cols; ++c) {
            var += (x.at(r, c) - mean) * (x.at(r, c) - mean);
            mag = std::max(mag, std::fabs(double(x.at(r, c))));
          }
          var /= double(s.cols);
          const double rstd = 1.0 / std::sqrt(var + s.eps);
          for (int64_t c = 0; c < s.cols; ++c) {
            const double want = (x.at(r, c) - mean) * rstd * gamma[size_t(c)] + beta[size_t(c)];
            // fp32 inputs near `mag` carry eps*mag of noise relative to the spread.
            const double tol = 8 * pola::test::kEps32 *
                               (std::fabs(gamma[size_t(c)]) * (1.0 + mag * rstd) * std::sqrt(double(s.cols)) +
                                std::fabs(beta[size_t(c)]));
            if (!(std::fabs(y.at(r, c) - want) <= tol)) ++bad;
          }
          for (int64_t c = s.cols; c < y.ld; ++c) if (y.at(r, c) != -12345.0f) ++bad;
        }
        CHECK(bad == 0);
      }
  }
}

TEST_CASE("layernorm_bf16 is the table's layernorm rounded by its to_bf16, bit for bit") {
  struct Shape { int64_t rows, cols; float offset; };
  const Shape shapes[] = {{1, 1, 0.0f}, {3, 7, 0.5f}, {9, 96, 300.0f}, {5, 333, -4.0f}};
  uint64_t seed = pola::test::base_seed() + 520;
  for (const Shape &s : shapes) {
    std::mt19937_64 rng(++seed);
    const LayerNormCase lc(s.rows, s.cols, s.offset, rng);
    const Strided &x = lc.x;
    const std::vector<float> &gamma = lc.gamma, &beta = lc.beta;
    for (const pola::test::IsaKernels *t : pola::test::available_tables())
      for (int threads : {1, 2}) {
        CAPTURE(seed);
        INFO("isa=" << std::string(isa_name(t->isa)) << " threads=" << threads << " cols=" << s.cols);
        Strided y(s.rows, s.cols, 2);
        t->layernorm(x.data.data(), x.ld, y.data.data(), y.ld, s.rows, s.cols, gamma.data(), beta.data(), 1e-5f,
                     threads);
        const int64_t ld_h = s.cols + 5;
        std::vector<uint16_t> want(size_t(s.rows * ld_h), 0xabcd), got(size_t(s.rows * ld_h), 0xabcd);
        t->to_bf16(y.data.data(), y.ld, want.data(), ld_h, s.rows, s.cols, 1);
        t->layernorm_bf16(x.data.data(), x.ld, got.data(), ld_h, s.rows, s.cols, gamma.data(), beta.data(), 1e-5f,
                          threads);
        CHECK(got == want); // padding included: both leave it untouched
      }
  }
}
