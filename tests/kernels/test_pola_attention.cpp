// The polarity attention core against (a) a double-precision oracle that
// computes SPEC section 3 literally, (b) for small N the explicit normalised
// form with the n_q x n_k matrix phi_q phi_k^T (proves the reassociation into
// the O(N) state), (c) the scalar reference, and (d) itself at other thread
// counts (must be bit-identical), (e) itself with cached stores when a large
// output is written with non-temporal ones (bit-identical).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;
using pola::test::Strided;

namespace {

struct Problem {
  int64_t n_q, n_k;
  int heads, d;
  Strided q, k, v;
  std::vector<float> pos_enc, inv_scale, power;
  bool with_pos;
  Problem(int64_t nq, int64_t nk, int h, int dd, bool pos, int64_t pad)
      : n_q(nq), n_k(nk), heads(h), d(dd), q(nq, int64_t(h) * dd, pad), k(nk, int64_t(h) * dd, pad + 3),
        v(nk, int64_t(h) * dd, pad + 1), pos_enc(size_t(nk * h * dd)), inv_scale(size_t(h * dd)),
        power(size_t(h * dd)), with_pos(pos) {}

  PolarityAttnArgs args(float *out, int64_t ld_out, int threads) const {
    PolarityAttnArgs a;
    a.n_q = n_q; a.n_k = n_k; a.heads = heads; a.head_dim = d;
    a.q = q.data.data(); a.ld_q = q.ld;
    a.k = k.data.data(); a.ld_k = k.ld;
    a.v = v.data.data(); a.ld_v = v.ld;
    a.pos_enc = with_pos ? pos_enc.data() : nullptr;
    a.inv_scale = inv_scale.data(); a.feature = FeatureMap{FeatureKind::abs_pow, power.data()};
    a.out = out; a.ld_out = ld_out; a.threads = threads;
    return a;
  }
};

// Signs: 0 = mixed, +1 = all q positive and all k negative (the x_sim
// denominator is exactly 0, only the 1e-6 keeps it finite).
Problem make_problem(int64_t nq, int64_t nk, int h, int d, bool pos, int signs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem p(nq, nk, h, d, pos, /*pad=*/5);
  pola::test::fill(p.q, rng, -2.0f, 2.0f, 0.05);
  pola::test::fill(p.k, rng, -2.0f, 2.0f, 0.05);
  pola::test::fill(p.v, rng, -1.5f, 1.5f, 0.05);
  std::uniform_real_distribution<float> pe(-0.5f, 0.5f), sc(0.5f, 2.0f), pw(1.0f, 5.0f);
  for (float &x : p.pos_enc) x = pos ? pe(rng) : 0.0f;
  for (float &x : p.inv_scale) x = sc(rng);
  for (size_t i = 0; i < p.power.size(); ++i) p.power[i] = pw(rng);
  // The exponent range's ends, exactly.
  p.power[0] = 1.0f;
  p.power[p.power.size() - 1] = 5.0f;
  // Near-zero query rows, where q_sim . kmean is comparable to the 1e-6 that
  // the spec adds to it (so a wrong or misplaced eps shows).
  for (int64_t t = 1; t < nq; t += 4) {
    const float tiny = std::pow(10.0f, -float(5 + (t / 4) % 3));
    for (int64_t c = 0; c < p.q.cols; ++c) p.q.at(t, c) *= tiny;
  }
  if (signs != 0) {
    for (auto &x : p.q.data) if (!std::isnan(x)) x = std::fabs(x);
    for (auto &x : p.k.data) if (!std::isnan(x)) x = -std::fabs(x) - 1.0f; // stays < 0 after pos_enc
  }
  return p;
}

double relu_pow(double u, double p) { return u > 0.0 ? std::pow(u, p) : 0.0; }

// Literal SPEC section 3 in double, plus per-output error scales:
// abs_num = (|q_sim| @ |phi_k|^T |v|) / n / (den + 1e-6) and the denominator.
struct Oracle {
  std::vector<double> x, abs_num, den_part; // (n_q, heads*d)
};

Oracle oracle(const Problem &p) {
  const int d = p.d, half = d / 2;
  const int64_t C = int64_t(p.heads) * d;
  Oracle o{std::vector<double>(size_t(p.n_q * C)), std::vector<double>(size_t(p.n_q * C)),
           std::vector<double>(size_t(p.n_q * C))};
  const double rn = 1.0 / std::sqrt(double(p.n_k));
  for (int h = 0; h < p.heads; ++h) {
    const int64_t c0 = int64_t(h) * d;
    // phi_k (n x 2d), kmean, KV1 = (phi^T n^-1/2)(v1 n^-1/2), KV2 likewise, and |.| versions.
    std::vector<double> kmean(2 * d, 0.0), kv(size_t(2 * d * d), 0.0), kv_abs(size_t(2 * d * d), 0.0);
    std::vector<double> phi(2 * d);
    for (int64_t t = 0; t < p.n_k; ++t) {
      for (int j = 0; j < d; ++j) {
        const double u = (double(p.k.at(t, c0 + j)) + double(p.pos_enc[size_t(t * C + c0 + j)])) *
                         double(p.inv_scale[size_t(c0 + j)]);
        phi[j] = relu_pow(u, p.power[size_t(c0 + j)]);
        phi[d + j] = relu_pow(-u, p.power[size_t(c0 + j)]);
      }
      for (int r = 0; r < 2 * d; ++r) {
        kmean[r] += phi[r] / double(p.n_k);
        for (int c = 0; c < d; ++c) {
          const double term = (phi[r] * rn) * (double(p.v.at(t, c0 + c)) * rn);
          kv[size_t(r * d + c)] += term;
          kv_abs[size_t(r * d + c)] += std::fabs(term);
        }
      }
    }
    std::vector<double> qs(2 * d), qo(2 * d);
    for (int64_t t = 0; t < p.n_q; ++t) {
      for (int j = 0; j < d; ++j) {
        const double u = double(p.q.at(t, c0 + j)) * double(p.inv_scale[size_t(c0 + j)]);
        qs[j] = relu_pow(u, p.power[size_t(c0 + j)]);
        qs[d + j] = relu_pow(-u, p.power[size_t(c0 + j)]);
      }
      for (int r = 0; r < 2 * d; ++r) qo[r] = r < d ? qs[d + r] : qs[r - d]; // [neg, pos]
      double den_s = 0, den_o = 0;
      for (int r = 0; r < 2 * d; ++r) { den_s += qs[r] * kmean[r]; den_o += qo[r] * kmean[r]; }
      for (int c = 0; c < d; ++c) {
        const std::vector<double> &qq = c < half ? qs : qo;
        const double den = (c < half ? den_s : den_o) + 1e-6;
        double num = 0, num_abs = 0;
        for (int r = 0; r < 2 * d; ++r) {
          num += qq[r] * kv[size_t(r * d + c)];
          num_abs += qq[r] * kv_abs[size_t(r * d + c)];
        }
        const size_t i = size_t(t * C + c0 + c);
        o.x[i] = num * (1.0 / den);
        o.abs_num[i] = num_abs / den;
        o.den_part[i] = (den - 1e-6) / den;
      }
    }
  }
  return o;
}

// The same attention from the explicit normalised form, only for small N:
// x_sim = sum_t (q_sim . phi_k[t]) v1[t] / n / (q_sim . kmean + 1e-6), via the
// n_q x n_k matrix A = q_sim phi_k^T (resp. q_opp phi_k^T).
std::vector<double> explicit_form(const Problem &p) {
  const int d = p.d, half = d / 2;
  const int64_t C = int64_t(p.heads) * d;
  std::vector<double> x(size_t(p.n_q * C));
  for (int h = 0; h < p.heads; ++h) {
    const int64_t c0 = int64_t(h) * d;
    std::vector<double> phik(size_t(p.n_k * 2 * d)), qs(size_t(p.n_q * 2 * d));
    for (int64_t t = 0; t < p.n_k; ++t)
      for (int j = 0; j < d; ++j) {
        const double u = (double(p.k.at(t, c0 + j)) + double(p.pos_enc[size_t(t * C + c0 + j)])) *
                         double(p.inv_scale[size_t(c0 + j)]);
        phik[size_t(t * 2 * d + j)] = relu_pow(u, p.power[size_t(c0 + j)]);
        phik[size_t(t * 2 * d + d + j)] = relu_pow(-u, p.power[size_t(c0 + j)]);
      }
    for (int64_t t = 0; t < p.n_q; ++t)
      for (int j = 0; j < d; ++j) {
        const double u = double(p.q.at(t, c0 + j)) * double(p.inv_scale[size_t(c0 + j)]);
        qs[size_t(t * 2 * d + j)] = relu_pow(u, p.power[size_t(c0 + j)]);
        qs[size_t(t * 2 * d + d + j)] = relu_pow(-u, p.power[size_t(c0 + j)]);
      }
    for (int64_t i = 0; i < p.n_q; ++i) {
      std::vector<double> a_sim(size_t(p.n_k)), a_opp(size_t(p.n_k));
      double s_sim = 0, s_opp = 0;
      for (int64_t t = 0; t < p.n_k; ++t) {
        double as = 0, ao = 0;
        for (int r = 0; r < 2 * d; ++r) {
          as += qs[size_t(i * 2 * d + r)] * phik[size_t(t * 2 * d + r)];
          ao += qs[size_t(i * 2 * d + (r + d) % (2 * d))] * phik[size_t(t * 2 * d + r)];
        }
        a_sim[size_t(t)] = as; a_opp[size_t(t)] = ao; s_sim += as; s_opp += ao;
      }
      const double n = double(p.n_k);
      for (int c = 0; c < d; ++c) {
        const bool sim = c < half;
        double num = 0;
        for (int64_t t = 0; t < p.n_k; ++t) num += (sim ? a_sim : a_opp)[size_t(t)] * p.v.at(t, c0 + c);
        x[size_t(i * C + c0 + c)] = (num / n) / ((sim ? s_sim : s_opp) / n + 1e-6);
      }
    }
  }
  return x;
}

// fp32 error budget relative to the oracle's error scale: pow via exp/log
// (|p log u| ulps) plus blocked sums over n_k terms.
double tolerance_factor(int64_t n_k) { return 32.0 + double(n_k) / 64.0; }

struct RunResult {
  Strided out;
  explicit RunResult(int64_t rows, int64_t cols) : out(rows, cols, 2) {
    for (auto &x : out.data) x = -12345.0f; // sentinel: gaps must stay untouched
  }
};

RunResult run(const pola::test::IsaKernels &t, const Problem &p, int threads) {
  RunResult r(p.n_q, int64_t(p.heads) * p.d);
  t.polarity_attention(p.args(r.out.data.data(), r.out.ld, threads));
  return r;
}

// Checks every output against the oracle within factor * eps * error scale.
void check_against_oracle(const Strided &out, const Oracle &o, double factor, const std::string &what) {
  int64_t bad = 0;
  double worst = 0;
  for (int64_t t = 0; t < out.rows; ++t) {
    for (int64_t c = 0; c < out.cols; ++c) {
      const size_t i = size_t(t * out.cols + c);
      const double tol = factor * pola::test::kEps32 *
                         (o.abs_num[i] + std::fabs(o.x[i]) * o.den_part[i]) + 1e-30;
      const double err = std::fabs(double(out.at(t, c)) - o.x[i]);
      worst = std::max(worst, err / tol);
      if (!(err <= tol)) ++bad; // NaN counts as bad
    }
    for (int64_t c = out.cols; c < out.ld; ++c)
      if (out.at(t, c) != -12345.0f) ++bad; // wrote outside the row
  }
  INFO(what << ": worst error / tolerance = " << worst);
  CHECK(bad == 0);
}

struct Shape {
  int64_t n_q, n_k;
  int heads, d;
  bool pos;
  int signs;
};

} // namespace

TEST_CASE("pola_attention matches the double oracle on every ISA, awkward shapes") {
  const Shape shapes[] = {
      {1, 1, 1, 16, false, 0},    {7, 7, 2, 20, true, 0},     {7, 13, 1, 32, true, 0},
      {33, 7, 3, 20, false, 0},   {5, 40, 2, 64, true, 1},    {3137, 3137, 1, 64, true, 0},
      {3137, 49, 2, 32, true, 0}, {64, 3137, 2, 16, false, 0}, {9, 300, 1, 7, true, 0},
      {100, 2500, 2, 64, false, 1},
      // d > 64: sign bits span three words, and key bands cross word boundaries.
      {50, 300, 1, 130, true, 0}};
  uint64_t seed = pola::test::base_seed();
  for (const Shape &s : shapes) {
    ++seed;
    const Problem p = make_problem(s.n_q, s.n_k, s.heads, s.d, s.pos, s.signs, seed);
    const Oracle o = oracle(p);
    for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
      for (int threads : {1, 2}) {
        CAPTURE(seed);
        INFO("isa=" << std::string(isa_name(t->isa)) << " threads=" << threads << " n_q=" << s.n_q
                    << " n_k=" << s.n_k << " heads=" << s.heads << " d=" << s.d
                    << " pos_enc=" << s.pos << " signs=" << s.signs);
        RunResult r = run(*t, p, threads);
        check_against_oracle(r.out, o, tolerance_factor(s.n_k), isa_name(t->isa));
      }
    }
  }
}

TEST_CASE("pola_attention: the O(N) state equals the explicit phi_q phi_k^T form (double)") {
  // Proves the reassociation in the oracle itself, then holds each ISA to it.
  const Shape shapes[] = {{7, 7, 2, 20, true, 0}, {12, 31, 1, 16, false, 1}, {1, 9, 3, 32, true, 0}};
  uint64_t seed = pola::test::base_seed() + 100;
  for (const Shape &s : shapes) {
    ++seed;
    CAPTURE(seed);
    const Problem p = make_problem(s.n_q, s.n_k, s.heads, s.d, s.pos, s.signs, seed);
    const Oracle o = oracle(p);
    const std::vector<double> e = explicit_form(p);
    for (size_t i = 0; i < e.size(); ++i)
      REQUIRE(std::fabs(e[i] - o.x[i]) <= 1e-9 * (o.abs_num[i] + std::fabs(o.x[i])) + 1e-300);
    for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
      INFO("isa=" << std::string(isa_name(t->isa)));
      RunResult r = run(*t, p, 1);
      Oracle oe = o;
      oe.x = e;
      check_against_oracle(r.out, oe, tolerance_factor(s.n_k), "explicit form");
    }
  }
}

TEST_CASE("pola_attention: every ISA agrees with the scalar reference") {
  uint64_t seed = pola::test::base_seed() + 200;
  const Problem p = make_problem(257, 1500, 3, 20, true, 0, seed);
  const Oracle o = oracle(p);
  const RunResult ref = run(*pola::test::kernels_for(Isa::scalar), p, 1);
  // Use the reference output as the centre; its own error is within the budget too.
  Oracle centred = o;
  for (int64_t t = 0; t < ref.out.rows; ++t)
    for (int64_t c = 0; c < ref.out.cols; ++c) centred.x[size_t(t * ref.out.cols + c)] = ref.out.at(t, c);
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    CAPTURE(seed);
    INFO("isa=" << std::string(isa_name(t->isa)));
    check_against_oracle(run(*t, p, 2).out, centred, 2 * tolerance_factor(p.n_k), "vs scalar");
  }
}

TEST_CASE("pola_attention is bit-identical for 1, 2 and 3 threads") {
  uint64_t seed = pola::test::base_seed() + 300;
  CAPTURE(seed);
  // n_k large enough for several key chunks.
  const Problem p = make_problem(3137, 5000, 2, 64, true, 0, seed);
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    INFO("isa=" << std::string(isa_name(t->isa)));
    const RunResult one = run(*t, p, 1);
    for (int threads : {2, 3}) {
      const RunResult many = run(*t, p, threads);
      CHECK(std::memcmp(one.out.data.data(), many.out.data.data(), one.out.data.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("pola_attention: a large aligned output (non-temporal stores) equals the cached-store path") {
  uint64_t seed = pola::test::base_seed() + 400;
  CAPTURE(seed);
  const int heads = 16, d = 64;
  const int64_t width = int64_t(heads) * d;
  const int64_t n_q = int64_t(kPolaStreamOutBytes / (width * sizeof(float))) + 3; // just over the threshold
  const Problem p = make_problem(n_q, 300, heads, d, true, 0, seed);
  // Out A: 64-byte aligned rows of exactly `width` floats, so the kernel
  // streams. Out B: one float of padding per row, so it cannot.
  const size_t a_floats = size_t(n_q * width), b_ld = size_t(width + 1);
  std::unique_ptr<float, decltype(&std::free)> out_a(
      static_cast<float *>(std::aligned_alloc(64, a_floats * sizeof(float))), &std::free);
  REQUIRE(out_a);
  std::vector<float> out_b(size_t(n_q) * b_ld);
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    if (t->isa == Isa::scalar) continue; // the scalar reference has no streaming path
    INFO("isa=" << std::string(isa_name(t->isa)));
    std::fill(out_a.get(), out_a.get() + a_floats, -1.0f);
    t->polarity_attention(p.args(out_a.get(), width, 2));
    t->polarity_attention(p.args(out_b.data(), int64_t(b_ld), 2));
    int64_t differ = 0;
    for (int64_t r = 0; r < n_q; ++r)
      differ += std::memcmp(out_a.get() + r * width, out_b.data() + r * b_ld, width * sizeof(float)) != 0;
    CHECK(differ == 0);
  }
}

TEST_CASE("pola_attention: feature maps at 0, subnormal, FLT_MIN and large inputs match the oracle") {
  // The SIMD |u|^p works on the float's bits (exponent + polynomial): the
  // values where that goes wrong first are exact zeros of either sign,
  // subnormals (no implicit leading 1), the smallest normal, and features
  // far from 1 (large |p log2 u|). Keys reach |u|^p ~ 1e20; queries stay
  // moderate so no fp32 product overflows.
  uint64_t seed = pola::test::base_seed() + 400;
  CAPTURE(seed);
  Problem p = make_problem(24, 24, 2, 16, false, 0, seed);
  const float specials[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 1.17549435e-38f, -1.17549435e-38f,
                            1e-20f, -1e-20f, 1.0f, -1.0f, 3.0e2f, -7.0e3f, 1.0e4f, -0.5f};
  const int n_special = int(sizeof(specials) / sizeof(specials[0]));
  for (int64_t t = 0; t < p.n_k; ++t)
    for (int64_t c = 0; c < p.k.cols; ++c)
      if ((t + c) % 3 == 0) p.k.at(t, c) = specials[(t * 7 + c) % n_special];
  for (int64_t t = 0; t < p.n_q; ++t)
    for (int64_t c = 0; c < p.q.cols; ++c)
      if ((t + c) % 3 == 1) p.q.at(t, c) = specials[(t * 5 + c) % (n_special - 3)] * 1e-1f;
  for (float &s : p.inv_scale) s = 1.0f; // keys of 1e4 at p = 5 give 1e20 exactly as built
  const Oracle o = oracle(p);
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    for (int threads : {1, 2}) {
      INFO("isa=" << std::string(isa_name(t->isa)) << " threads=" << threads);
      check_against_oracle(run(*t, p, threads).out, o, tolerance_factor(p.n_k), "special inputs");
    }
  }
}
