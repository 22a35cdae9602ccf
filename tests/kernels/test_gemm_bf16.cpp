// The AMX bf16 GEMM (kernels/gemm_bf16.h) against its scalar reference on the
// same bf16 inputs and packed weights: every epilogue (bias or none, exact
// GELU, residual accumulate into fp32, bf16 dst), ragged rows, columns and k,
// strided A and dst whose gaps hold NaN (a read past a row poisons the
// result, a write past one shows), and 1, 2 and 3 threads bit for bit equal.
// Bound per element: 1e-5 of sum |a b| + |bias| (fp32 sums of exact
// products) plus 1e-6 relative (the GELU's erf approximation); bf16 dst one
// bf16 step (2^-7 relative) more, and without GELU at most 1% of bf16 outputs
// (+1) may differ from the reference's bits at all. Runs only where AMX-BF16 is active.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "helpers.h"
#include "kernels/gemm_bf16.h"
#include "kernels/registry.h"
#include "kernels/simd/to_bf16_rne.hpp"

using namespace pola::kernels;
using pola::DType;

namespace {

constexpr uint16_t kBf16Nan = 0x7fc0;

struct GemmProblem {
  int64_t rows, k, n, ld_a, ld_dst;
  Bf16GemmLayout layout;
  std::vector<uint16_t> a, packed;
  std::vector<float> w, bias, dst0; // dst0: the residual stream before the call
  std::vector<double> magnitude;    // sum_k |a b| + |bias| per output
  GemmProblem(int64_t r, int64_t kk, int64_t nn, uint64_t seed)
      : rows(r), k(kk), n(nn), ld_a(kk + 5), ld_dst(nn + 3), layout(kk, nn), a(size_t(r * (kk + 5)), kBf16Nan),
        packed(size_t(layout.packed_elems())), w(size_t(nn * kk)), bias(size_t(nn)),
        dst0(size_t(r * (nn + 3)), std::numeric_limits<float>::quiet_NaN()), magnitude(size_t(r * nn)) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < kk; ++j) a[size_t(i * ld_a + j)] = bf16_rne(2.f * u(rng));
    for (float &x : w) x = u(rng);
    for (float &x : bias) x = u(rng);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < nn; ++j) dst0[size_t(i * ld_dst + j)] = 3.f * u(rng);
    pack_gemm_bf16_weights(w.data(), false, layout, packed.data());
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < nn; ++j) {
        double s = std::fabs(bias[size_t(j)]);
        for (int64_t q = 0; q < kk; ++q)
          s += std::fabs(bf16_to_float(a[size_t(i * ld_a + q)]) * bf16_to_float(bf16_rne(w[size_t(j * kk + q)])));
        magnitude[size_t(i * nn + j)] = s;
      }
  }
  Bf16GemmArgs args(void *dst, bool with_bias, bool accumulate, bool dst_bf16, int threads) const {
    Bf16GemmArgs g;
    g.rows = rows;
    g.layout = layout;
    g.a = a.data();
    g.ld_a = ld_a;
    g.b = packed.data();
    g.bias = with_bias ? bias.data() : nullptr;
    g.accumulate = accumulate;
    g.dst_bf16 = dst_bf16;
    g.dst = dst;
    g.ld_dst = ld_dst;
    g.threads = threads;
    return g;
  }
};

struct Epilogue {
  bool bias, accumulate, dst_bf16;
  std::string name() const {
    return std::string(bias ? "bias" : "no-bias") + (accumulate ? "+accumulate" : "") +
           (dst_bf16 ? "+bf16-dst" : "");
  }
};

// One epilogue at 1, 2 and 3 threads: reference bound, gaps untouched, threads identical.
void check(const GemmProblem &p, const Epilogue &e, KernelFn<Op::gemm, DType::bf16> fn) {
  CAPTURE(p.rows);
  CAPTURE(p.k);
  CAPTURE(p.n);
  const std::string name = e.name();
  CAPTURE(name);
  std::vector<float> ref_f = p.dst0;
  std::vector<uint16_t> ref_h(p.dst0.size(), kBf16Nan);
  void *ref_dst = e.dst_bf16 ? static_cast<void *>(ref_h.data()) : ref_f.data();
  reference::gemm_bf16(p.args(ref_dst, e.bias, e.accumulate, e.dst_bf16, 1));
  std::vector<float> first_f;
  std::vector<uint16_t> first_h;
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    std::vector<float> got_f = p.dst0;
    std::vector<uint16_t> got_h(p.dst0.size(), kBf16Nan);
    fn(p.args(e.dst_bf16 ? static_cast<void *>(got_h.data()) : got_f.data(), e.bias, e.accumulate, e.dst_bf16,
              threads));
    int bad = 0;
    int64_t rounded_apart = 0; // bf16 dst: outputs whose bits differ from the reference's
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t c = 0; c < p.ld_dst; ++c) {
        const size_t i = size_t(r * p.ld_dst + c);
        if (c >= p.n) { // the gap: untouched
          const bool kept = e.dst_bf16 ? got_h[i] == kBf16Nan : std::isnan(got_f[i]);
          if (!kept && bad++ < 3) FAIL_CHECK("write past the row end at row " << r << " col " << c);
          continue;
        }
        const double want = e.dst_bf16 ? bf16_to_float(ref_h[i]) : ref_f[i];
        const double got = e.dst_bf16 ? bf16_to_float(got_h[i]) : got_f[i];
        double tol = 1e-5 * p.magnitude[size_t(r * p.n + c)] + 1e-6 * std::fabs(want) + 1e-6;
        if (e.dst_bf16) {
          tol += std::ldexp(std::fabs(want), -7);
          rounded_apart += got_h[i] != ref_h[i];
        }
        if (!(std::fabs(got - want) <= tol) && bad++ < 3)
          FAIL_CHECK("row " << r << " col " << c << ": got " << got << " want " << want << " (tol " << tol << ")");
      }
    CHECK(bad == 0);
    // Rounding to nearest even from sums that differ by ~1e-6 relative lands on
    // the reference's bf16 value except near a rounding boundary (a few in
    // 10^4); truncation or a wrong rounding mode moves about half of them.
    CHECK(rounded_apart <= 1 + p.rows * p.n / 100);
    if (threads == 1) {
      first_f = got_f;
      first_h = got_h;
    } else {
      CHECK(std::memcmp(got_f.data(), first_f.data(), got_f.size() * 4) == 0);
      CHECK(std::memcmp(got_h.data(), first_h.data(), got_h.size() * 2) == 0);
    }
  }
}

// The AMX GEMM when this run checks AMX-BF16 (which this CPU then has), else null.
KernelFn<Op::gemm, DType::bf16> amx_gemm_or_skip() {
  if (!pola::test::runs_feature(pola::test::Feature::amx_bf16)) return nullptr;
  KernelFn<Op::gemm, DType::bf16> fn = lookup<Op::gemm, DType::bf16>(Isa::amx_bf16);
  REQUIRE(bool(fn));
  return fn;
}

} // namespace

TEST_CASE("gemm_bf16: packing puts W[n][k] where the layout says, zero padded") {
  const Bf16GemmLayout l(37, 45);
  CHECK(l.kp == 64);
  CHECK(l.np == 64);
  std::vector<float> w(size_t(45 * 37));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 251) - 100.f;
  std::vector<uint16_t> packed(size_t(l.packed_elems()), 1);
  pack_gemm_bf16_weights(w.data(), false, l, packed.data());
  int bad = 0;
  for (int64_t n = 0; n < l.np; ++n)
    for (int64_t k = 0; k < l.kp; ++k) {
      const uint16_t got = packed[size_t((n / 32) * (l.kp / 2) * 64 + (k / 2) * 64 + (n % 32) * 2 + k % 2)];
      const uint16_t want = n < 45 && k < 37 ? bf16_rne(w[size_t(n * 37 + k)]) : uint16_t(0);
      bad += got != want;
    }
  CHECK(bad == 0);
  // bf16 input bits are taken as they are.
  std::vector<uint16_t> wb(w.size()), packed_b(packed.size(), 1);
  for (size_t i = 0; i < w.size(); ++i) wb[i] = bf16_rne(w[i]);
  pack_gemm_bf16_weights(wb.data(), true, l, packed_b.data());
  CHECK(packed_b == packed);
}

TEST_CASE("gemm_bf16: AMX kernel matches the reference, every epilogue, ragged tails, 1/2/3 threads") {
  const KernelFn<Op::gemm, DType::bf16> fn = amx_gemm_or_skip();
  if (!fn) return;
  struct Size { int64_t rows, k, n; };
  // Full blocks (direct A loads), ragged rows/columns/k, one row, rows spanning chunks.
  const Size sizes[] = {{32, 64, 64}, {1, 32, 32},  {49, 96, 80},  {17, 48, 40},
                        {33, 70, 33}, {65, 128, 100}, {200, 130, 31}, {96, 384, 96}};
  const Epilogue epilogues[] = {{true, false, false}, {false, false, false}, {true, true, false},
                                {true, false, true},  {false, false, true}};
  uint64_t seed = pola::test::base_seed();
  MESSAGE("seed " << seed);
  for (const Size &s : sizes) {
    const GemmProblem p(s.rows, s.k, s.n, seed++);
    for (const Epilogue &e : epilogues) check(p, e, fn);
  }
}

TEST_CASE("gemm_bf16: large rows split over chunks and threads stay bit-identical") {
  const KernelFn<Op::gemm, DType::bf16> fn = amx_gemm_or_skip();
  if (!fn) return;
  const GemmProblem p(1000, 1056, 72, pola::test::base_seed() + 99); // A rows larger than one L2 chunk
  check(p, {true, true, false}, fn);
}
