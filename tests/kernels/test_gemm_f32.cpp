// The own fp32 GEMM (kernels/gemm_f32.h) on every ISA against a double
// oracle computed here from the unpacked PyTorch weight (so packing is
// checked too), and against the scalar reference: odd rows (1, 7, 197), K (3,
// 64, 97) and N (1, 17, 1000), strided A and dst whose gaps hold NaN (a read
// past a row poisons the result, a write past one shows), bias or none,
// accumulate or not, 1 and 2 threads bit for bit equal; the weights packed
// into the ISA's panels and in the plain (N, K) layout read in place, which
// must give the packed path's bits.
// Bound per element: 4 K eps32 (sum_k |a w| + |bias| + |dst0|), fp32 sums.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.h"
#include "kernels/gemm_f32.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;

namespace {

struct F32Problem {
  int64_t rows, k, n, ld_a, ld_dst;
  std::vector<float> a, w, bias, dst0;
  F32Problem(int64_t r, int64_t kk, int64_t nn, uint64_t seed)
      : rows(r), k(kk), n(nn), ld_a(kk + 5), ld_dst(nn + 3), a(size_t(r * (kk + 5)), std::numeric_limits<float>::quiet_NaN()),
        w(size_t(nn * kk)), bias(size_t(nn)), dst0(size_t(r * (nn + 3)), std::numeric_limits<float>::quiet_NaN()) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < kk; ++j) a[size_t(i * ld_a + j)] = 2.f * u(rng);
    for (float &x : w) x = u(rng);
    for (float &x : bias) x = u(rng);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < nn; ++j) dst0[size_t(i * ld_dst + j)] = 3.f * u(rng);
  }
};

} // namespace

TEST_CASE("gemm_f32 matches a double oracle and the scalar reference on every ISA") {
  uint64_t seed = pola::test::base_seed() + 3900;
  std::vector<Isa> isas;
  for (Isa isa : {Isa::scalar, Isa::neon64, Isa::avx2, Isa::avx512})
    if (lookup<Op::gemm, DType::f32>(isa) && (isa == Isa::scalar || pola::test::covers(pola::test::feature_of(isa))))
      isas.push_back(isa);
  for (int64_t rows : {int64_t(1), int64_t(7), int64_t(197)})
    for (int64_t k : {int64_t(3), int64_t(64), int64_t(97)})
      for (int64_t n : {int64_t(1), int64_t(17), int64_t(1000)}) {
        ++seed;
        const F32Problem pr(rows, k, n, seed);
        for (bool with_bias : {false, true})
          for (bool accumulate : {false, true}) {
            // The oracle and each output's magnitude, from the unpacked weight.
            std::vector<double> want(size_t(rows * n)), mag(size_t(rows * n));
            for (int64_t i = 0; i < rows; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double s = 0, m = 0;
                for (int64_t q = 0; q < k; ++q) {
                  const double p = double(pr.a[size_t(i * pr.ld_a + q)]) * double(pr.w[size_t(j * k + q)]);
                  s += p;
                  m += std::fabs(p);
                }
                if (with_bias) s += pr.bias[size_t(j)], m += std::fabs(pr.bias[size_t(j)]);
                if (accumulate) {
                  const double d = pr.dst0[size_t(i * pr.ld_dst + j)];
                  s += d, m += std::fabs(d);
                }
                want[size_t(i * n + j)] = s;
                mag[size_t(i * n + j)] = m;
              }
            std::vector<float> ref_out, packed_out;
            for (Isa isa : isas)
            for (bool plain : {false, true}) {
              const F32GemmLayout layout =
                  plain ? F32GemmLayout::plain_weights(k, n) : F32GemmLayout(k, n, gemm_f32_panel_width(isa));
              std::vector<float> packed(size_t(layout.packed_elems()));
              if (plain) packed = pr.w;
              else pack_gemm_f32_weights(pr.w.data(), false, layout, packed.data());
              const auto fn = lookup<Op::gemm, DType::f32>(isa);
              std::vector<float> out1 = pr.dst0, out2 = pr.dst0;
              F32GemmArgs g;
              g.rows = rows;
              g.layout = layout;
              g.a = pr.a.data();
              g.ld_a = pr.ld_a;
              g.b = packed.data();
              g.bias = with_bias ? pr.bias.data() : nullptr;
              g.accumulate = accumulate;
              g.ld_dst = pr.ld_dst;
              g.dst = out1.data();
              g.threads = 1;
              fn(g);
              g.dst = out2.data();
              g.threads = 2;
              fn(g);
              CAPTURE(seed);
              INFO("isa=" << std::string(isa_name(isa)) << (plain ? " plain" : " packed") << " rows=" << rows << " k=" << k << " n=" << n << " bias=" << with_bias
                          << " accumulate=" << accumulate);
              CHECK(std::memcmp(out1.data(), out2.data(), out1.size() * sizeof(float)) == 0);
              int64_t bad = 0, bad_ref = 0, gaps = 0;
              for (int64_t i = 0; i < rows; ++i) {
                for (int64_t j = 0; j < n; ++j) {
                  const size_t o = size_t(i * n + j);
                  const double got = out1[size_t(i * pr.ld_dst + j)];
                  const double tol = 4.0 * double(k + 2) * pola::test::kEps32 * mag[o] + 1e-30;
                  if (!(std::fabs(got - want[o]) <= tol)) {
                    if (bad < 3) MESSAGE("r=" << i << " c=" << j << " got " << got << " want " << want[o]);
                    ++bad;
                  }
                  if (!ref_out.empty() && !(std::fabs(got - ref_out[size_t(i * pr.ld_dst + j)]) <= tol)) ++bad_ref;
                }
                for (int64_t j = n; j < pr.ld_dst; ++j) gaps += !std::isnan(out1[size_t(i * pr.ld_dst + j)]);
              }
              CHECK(bad == 0);
              CHECK(bad_ref == 0); // against the scalar reference (the first ISA)
              CHECK(gaps == 0);    // nothing written past n
              if (ref_out.empty()) ref_out = out1;
              if (!plain) packed_out = out1;
              else CHECK(std::memcmp(out1.data(), packed_out.data(), out1.size() * sizeof(float)) == 0);
            }
          }
      }
}

TEST_CASE("gemm_f32 refuses weights packed for another panel width") {
  for (Isa isa : {Isa::neon64, Isa::avx2, Isa::avx512}) {
    const auto fn = lookup<Op::gemm, DType::f32>(isa);
    if (!fn) continue;
    F32GemmArgs g;
    g.layout = F32GemmLayout(4, 4, gemm_f32_panel_width(isa) + 1);
    CHECK_THROWS_AS(fn(g), std::invalid_argument);
  }
}
