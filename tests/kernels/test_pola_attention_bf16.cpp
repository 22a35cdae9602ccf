// The bf16 polarity cores (the registry's polarity_attention keyed bf16:
// products on AMX tiles, and on AVX512-BF16 dot products) against the fp32
// scalar reference, on shapes
// with ragged token blocks and head widths that are not multiples of the
// tile width. The bound: relative L2 error per head <= 1e-2 (the accuracy
// goal for the bf16 core), max element error <= 4e-2 of the head's largest
// output; and every shape's output is bit-identical for 1, 2 and 3 threads.
// Each core runs where this CPU has its instructions (an AMX CPU runs both);
// elsewhere the case says so and checks nothing for that core.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;
using pola::test::Strided;

namespace {

struct Bf16Problem {
  int64_t n_q, n_k;
  int heads, d;
  Strided q, k, v;
  std::vector<float> pos_enc, inv_scale, power;
  Bf16Problem(int64_t nq, int64_t nk, int h, int dd, uint64_t seed)
      : n_q(nq), n_k(nk), heads(h), d(dd), q(nq, int64_t(h) * dd, 3), k(nk, int64_t(h) * dd, 5),
        v(nk, int64_t(h) * dd, 1), pos_enc(size_t(nk * h * dd)), inv_scale(size_t(h * dd)), power(size_t(h * dd)) {
    std::mt19937_64 rng(seed);
    pola::test::fill(q, rng, -2.0f, 2.0f, 0.02);
    pola::test::fill(k, rng, -2.0f, 2.0f, 0.02);
    pola::test::fill(v, rng, -1.5f, 1.5f, 0.02);
    std::uniform_real_distribution<float> pe(-0.5f, 0.5f), sc(0.5f, 2.0f), pw(1.0f, 5.0f);
    for (float &x : pos_enc) x = pe(rng);
    for (float &x : inv_scale) x = sc(rng);
    for (float &x : power) x = pw(rng);
  }
  // out has NaN gaps between rows: a write past a row's width shows.
  PolarityAttnArgs args(Strided &out, int threads) const {
    PolarityAttnArgs a;
    a.n_q = n_q; a.n_k = n_k; a.heads = heads; a.head_dim = d;
    a.q = q.data.data(); a.ld_q = q.ld;
    a.k = k.data.data(); a.ld_k = k.ld;
    a.v = v.data.data(); a.ld_v = v.ld;
    a.pos_enc = pos_enc.data(); a.inv_scale = inv_scale.data(); a.feature = FeatureMap{FeatureKind::abs_pow, power.data()};
    a.out = out.data.data(); a.ld_out = out.ld; a.threads = threads;
    return a;
  }
};

using CoreFn = KernelFn<Op::polarity_attention, DType::bf16>;

// The bf16 cores this run checks, each with its ISA.
std::vector<std::pair<Isa, CoreFn>> bf16_cores() {
  std::vector<std::pair<Isa, CoreFn>> cores;
  for (Isa isa : {Isa::amx_bf16, Isa::avx512_bf16}) {
    if (!pola::test::runs_feature(pola::test::feature_of(isa))) continue;
    CoreFn fn = lookup<Op::polarity_attention, DType::bf16>(isa);
    REQUIRE(bool(fn));  // the feature is there: its core must be
    cores.emplace_back(isa, fn);
  }
  return cores;
}

} // namespace

TEST_CASE("pola_attention_bf16 is within bf16 error of the fp32 reference, ragged shapes, any thread count") {
  const auto ref = lookup<Op::polarity_attention, DType::f32>(Isa::scalar);
  struct Shape { int64_t n_q, n_k; int heads, d; };
  // Token counts off every block size (8, 16, 32, 64, 128), chunk counts from
  // 1 to several, head widths 2..128 including ones that pad the products.
  const Shape shapes[] = {{1, 1, 1, 64},   {37, 301, 2, 64}, {130, 1000, 3, 32}, {77, 513, 2, 24},
                          {65, 4097, 1, 128}, {200, 700, 2, 40}, {50, 90, 4, 2},  {129, 129, 8, 64},
                          {3136, 49, 1, 64}, {196, 49, 5, 64}, {300, 2500, 3, 64}};
  for (const auto &[isa, core] : bf16_cores()) {
    uint64_t seed = pola::test::base_seed();
    for (const Shape &s : shapes) {
      const Bf16Problem p(s.n_q, s.n_k, s.heads, s.d, ++seed);
      INFO(std::string(isa_name(isa)) << " core, n_q=" << s.n_q << " n_k=" << s.n_k << " heads=" << s.heads << " d=" << s.d
                              << " seed " << seed);
      const int64_t cols = int64_t(s.heads) * s.d;
      Strided want(s.n_q, cols, 2), got(s.n_q, cols, 2), one(s.n_q, cols, 2), three(s.n_q, cols, 2);
      ref(p.args(want, 2));
      core(p.args(got, 2));
      core(p.args(one, 1));
      core(p.args(three, 3));
      for (int h = 0; h < s.heads; ++h) {
        double diff2 = 0, ref2 = 0, diff_max = 0, ref_max = 0;
        bool finite = true;
        for (int64_t t = 0; t < s.n_q; ++t)
          for (int c = h * s.d; c < (h + 1) * s.d; ++c) {
            const double f = want.at(t, c), e = double(got.at(t, c)) - f;
            finite = finite && std::isfinite(got.at(t, c));
            diff2 += e * e;
            ref2 += f * f;
            diff_max = std::max(diff_max, std::fabs(e));
            ref_max = std::max(ref_max, std::fabs(f));
          }
        INFO("head " << h);
        REQUIRE(finite);
        CHECK(std::sqrt(diff2 / ref2) <= 1e-2);
        CHECK(diff_max <= 4e-2 * ref_max);
      }
      for (int64_t t = 0; t < s.n_q; ++t) // the gaps between output rows stay untouched
        for (int64_t c = got.cols; c < got.ld; ++c) CHECK(std::isnan(got.at(t, c)));
      for (int64_t t = 0; t < s.n_q; ++t) // the same bits for any thread count
        for (int64_t c = 0; c < cols; ++c) {
          REQUIRE(one.at(t, c) == got.at(t, c));
          REQUIRE(three.at(t, c) == got.at(t, c));
        }
    }
  }
}

// The cores against the registered scalar reference of polarity_attention
// keyed bf16 (kernels/reference/polarity_attention.cpp, Bf16Rounding: the
// same bf16 roundings, sums in double). What remains is the cores' fp32 sums and their
// feature maps (abs_pow_bf16: 1.2e-4 relative before rounding), which round a
// feature next to a bf16 midpoint the other way: one ulp (2^-8 .. 2^-7
// relative) on a few percent of the operands, in both directions. So the
// bound is per head, scaled to the head's outputs: relative L2 error
// <= kRefL2 and max error <= kRefMax of the head's largest output, a few
// times what the cores measure, and well under the systematic error of a
// reference that rounds by truncation (each operand 2^-9 low on average).
TEST_CASE("pola_attention_bf16 cores match the bf16 scalar reference") {
  constexpr double kRefL2 = 5e-3, kRefMax = 1.5e-2;
  const auto ref = lookup<Op::polarity_attention, DType::bf16>(Isa::scalar);
  REQUIRE(bool(ref));
  struct Shape { int64_t n_q, n_k; int heads, d; };
  const Shape shapes[] = {{1, 1, 1, 64},   {37, 301, 2, 64}, {130, 1000, 3, 32}, {77, 513, 2, 24},
                          {65, 4097, 1, 128}, {50, 90, 4, 2}, {196, 49, 5, 64}, {300, 2500, 3, 64}};
  for (const auto &[isa, core] : bf16_cores()) {
    uint64_t seed = pola::test::base_seed() + 300;
    double worst_l2 = 0, worst_max = 0;
    for (const Shape &s : shapes) {
      const Bf16Problem p(s.n_q, s.n_k, s.heads, s.d, ++seed);
      INFO(std::string(isa_name(isa)) << " core, n_q=" << s.n_q << " n_k=" << s.n_k << " heads=" << s.heads
                                      << " d=" << s.d << " seed " << seed);
      const int64_t cols = int64_t(s.heads) * s.d;
      Strided want(s.n_q, cols, 2), got(s.n_q, cols, 2);
      ref(p.args(want, 2));
      core(p.args(got, 2));
      for (int h = 0; h < s.heads; ++h) {
        double diff2 = 0, ref2 = 0, diff_max = 0, ref_max = 0;
        for (int64_t t = 0; t < s.n_q; ++t)
          for (int c = h * s.d; c < (h + 1) * s.d; ++c) {
            const double f = want.at(t, c), e = double(got.at(t, c)) - f;
            diff2 += e * e;
            ref2 += f * f;
            diff_max = std::max(diff_max, std::fabs(e));
            ref_max = std::max(ref_max, std::fabs(f));
          }
        const double l2 = std::sqrt(diff2 / ref2), mx = diff_max / ref_max;
        worst_l2 = std::max(worst_l2, l2);
        worst_max = std::max(worst_max, mx);
        INFO("head " << h << ": relative L2 error " << l2 << " (bound " << kRefL2 << "), max error / max |out| " << mx
                     << " (bound " << kRefMax << ")");
        CHECK(l2 <= kRefL2);
        CHECK(mx <= kRefMax);
      }
    }
    MESSAGE(std::string(isa_name(isa)) << " core vs bf16 reference: worst relative L2 " << worst_l2 << ", worst max " << worst_max);
  }
}
