// The polarity core with the exp_sigmoid feature map and RoPE (PolaFormer++,
// SPEC-polaformerpp 2.6-2.7): (a) the scalar reference against an oracle
// written here from the spec's formula form (the n x n kernel
// <R_n phi(q_n), R_m psi(k_m)>, in double), (b) every ISA's fp32 core
// against the scalar reference on the model's head widths, a tail width and
// the stage sizes, with and without a RoPE table, (c) bit-identical output for
// 1, 2 and 3 threads. "Matches": each output within a worst-case fp32 bound
// and the whole output within a tight relative L2 error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::test::Strided;

namespace {

// The width-D table of SPEC-polaformerpp 2.6 for an h x w grid, in float32 as
// the model builds it: theta_j = 10000^(-j/(m-1)), m = D/4, each repeated
// twice; dims [0, D/2) turn by the row index, [D/2, D) by the column index.
struct Rope {
  std::vector<float> cos, sin;
  int64_t width;
  Rope(int64_t h, int64_t w, int64_t D) : cos(size_t(h * w * D)), sin(size_t(h * w * D)), width(D) {
    const int64_t m = D / 4;
    std::vector<float> angle(size_t(D / 2));
    for (int64_t j = 0; j < m; ++j) {
      const float lin = m > 1 ? float(j) / float(m - 1) : 0.0f;
      const float theta = 1.0f / std::pow(10000.0f, lin);
      angle[size_t(2 * j)] = angle[size_t(2 * j + 1)] = theta;
    }
    for (int64_t r = 0; r < h; ++r)
      for (int64_t c = 0; c < w; ++c) {
        const int64_t n = r * w + c;
        for (int64_t k = 0; k < D; ++k) {
          const float a = k < D / 2 ? float(r) * angle[size_t(k)] : float(c) * angle[size_t(k - D / 2)];
          cos[size_t(n * D + k)] = std::cos(a);
          sin[size_t(n * D + k)] = std::sin(a);
        }
      }
  }
};

struct Problem {
  int64_t n, gh, gw;
  int heads, d;
  Strided q, k, v;
  std::vector<float> sigma_same, sigma_opp;
  Rope rope;
  bool with_rope;
  Problem(int64_t grid_h, int64_t grid_w, int h, int dd, bool use_rope, uint64_t seed)
      : n(grid_h * grid_w), gh(grid_h), gw(grid_w), heads(h), d(dd), q(n, int64_t(h) * dd, 3),
        k(n, int64_t(h) * dd, 5), v(n, int64_t(h) * dd, 1), sigma_same(size_t(2 * h * dd)),
        sigma_opp(size_t(2 * h * dd)), rope(grid_h, grid_w, 2 * dd), with_rope(use_rope) {
    std::mt19937_64 rng(seed);
    pola::test::fill(q, rng, -3.0f, 3.0f, 0.03);
    pola::test::fill(k, rng, -3.0f, 3.0f, 0.03);
    pola::test::fill(v, rng, -1.5f, 1.5f, 0.03);
    std::uniform_real_distribution<float> sg(0.02f, 0.98f);
    for (float &x : sigma_same) x = sg(rng);
    for (float &x : sigma_opp) x = sg(rng);
  }

  PolarityAttnArgs args(float *out, int64_t ld_out, int threads) const {
    PolarityAttnArgs a;
    a.n_q = a.n_k = n;
    a.heads = heads; a.head_dim = d;
    a.q = q.data.data(); a.ld_q = q.ld;
    a.k = k.data.data(); a.ld_k = k.ld;
    a.v = v.data.data(); a.ld_v = v.ld;
    a.feature.kind = FeatureKind::exp_sigmoid;
    a.feature.sigma_same = sigma_same.data();
    a.feature.sigma_opp = sigma_opp.data();
    if (with_rope) a.rope = RopeTable{rope.cos.data(), rope.sin.data(), rope.width};
    a.out = out; a.ld_out = ld_out; a.threads = threads;
    return a;
  }
};

// Per-head features in double, straight from the spec: psi = exp([k+, k-]) - 1,
// phi_s = exp([q+, q-] * sigma_same) - 1, phi_o = exp([q-, q+] * sigma_opp) - 1.
// Also each feature's error budget in fp32: the exp's relative error on
// 1 + phi (and the product's on its argument x), i.e. ~(1 + phi)(1 + x), 0
// for a feature that is exactly 0.
struct Features {
  std::vector<double> psi, phi_s, phi_o, err_psi, err_s, err_o; // (n, 2d) each
};

double budget(double x, double f) { return f == 0.0 ? 0.0 : (1.0 + f) * (1.0 + x); }

Features features(const Problem &p, int h) {
  const int d = p.d;
  const size_t w = size_t(2 * d);
  Features f;
  for (auto *vec : {&f.psi, &f.phi_s, &f.phi_o, &f.err_psi, &f.err_s, &f.err_o}) vec->assign(size_t(p.n) * w, 0.0);
  for (int64_t t = 0; t < p.n; ++t) {
    for (int j = 0; j < d; ++j) {
      const double kk = p.k.at(t, int64_t(h) * d + j), qq = p.q.at(t, int64_t(h) * d + j);
      const double kp = std::max(kk, 0.0), kn = std::max(-kk, 0.0);
      const double qp = std::max(qq, 0.0), qn = std::max(-qq, 0.0);
      const size_t i = size_t(t) * w;
      const size_t s = size_t(2 * h * d);
      const double xs[4] = {qp * p.sigma_same[s + j], qn * p.sigma_same[s + d + j], qn * p.sigma_opp[s + j],
                            qp * p.sigma_opp[s + d + j]};
      f.psi[i + j] = std::exp(kp) - 1.0;
      f.psi[i + d + j] = std::exp(kn) - 1.0;
      f.phi_s[i + j] = std::exp(xs[0]) - 1.0;
      f.phi_s[i + d + j] = std::exp(xs[1]) - 1.0;
      f.phi_o[i + j] = std::exp(xs[2]) - 1.0;
      f.phi_o[i + d + j] = std::exp(xs[3]) - 1.0;
      f.err_psi[i + j] = budget(kp, f.psi[i + j]);
      f.err_psi[i + d + j] = budget(kn, f.psi[i + d + j]);
      f.err_s[i + j] = budget(xs[0], f.phi_s[i + j]);
      f.err_s[i + d + j] = budget(xs[1], f.phi_s[i + d + j]);
      f.err_o[i + j] = budget(xs[2], f.phi_o[i + j]);
      f.err_o[i + d + j] = budget(xs[3], f.phi_o[i + d + j]);
    }
  }
  return f;
}

// x (2d at token t) rotated by the problem's table, in double (a copy without one).
std::vector<double> rotated(const Problem &p, const double *x, int64_t t) {
  const int64_t w = 2 * p.d;
  std::vector<double> y(x, x + w);
  if (!p.with_rope) return y;
  for (int64_t i = 0; i < w; i += 2) {
    const double c = p.rope.cos[size_t(t * w + i)], s = p.rope.sin[size_t(t * w + i)];
    y[size_t(i)] = x[i] * c - x[i + 1] * s;
    y[size_t(i + 1)] = x[i + 1] * c + x[i] * s;
  }
  return y;
}

// An upper bound of a rotated vector's magnitudes: |R x| <= |x_2i| + |x_2i+1| on both of a pair.
std::vector<double> rotated_bound(const Problem &p, const double *x) {
  const int64_t w = 2 * p.d;
  std::vector<double> y(x, x + w);
  if (!p.with_rope) return y;
  for (int64_t i = 0; i < w; i += 2) y[size_t(i)] = y[size_t(i + 1)] = std::fabs(x[i]) + std::fabs(x[i + 1]);
  return y;
}

// The oracle: SPEC-polaformerpp 2.7's formula form, per token n, path p, head t:
//   O_p[n] = sum_m <R_n phi_p(q_n), R_m psi(k_m)> v_p[m] / N / (<phi_p(q_n), mean_m psi(k_m)> + 1e-6),
// the n x n kernel explicitly, nothing reassociated.
std::vector<double> oracle(const Problem &p) {
  const int d = p.d, half = d / 2;
  const int64_t C = int64_t(p.heads) * d, w = 2 * d;
  std::vector<double> out(size_t(p.n * C));
  for (int h = 0; h < p.heads; ++h) {
    const Features f = features(p, h);
    std::vector<double> kbar(size_t(w), 0.0);
    for (int64_t m = 0; m < p.n; ++m)
      for (int64_t r = 0; r < w; ++r) kbar[size_t(r)] += f.psi[size_t(m * w + r)] / double(p.n);
    std::vector<std::vector<double>> rk(size_t(p.n));
    for (int64_t m = 0; m < p.n; ++m) rk[size_t(m)] = rotated(p, f.psi.data() + m * w, m);
    for (int64_t t = 0; t < p.n; ++t) {
      for (int path = 0; path < 2; ++path) {
        const double *phi = (path == 0 ? f.phi_s : f.phi_o).data() + t * w;
        const std::vector<double> rq = rotated(p, phi, t);
        double z = 0.0;
        for (int64_t r = 0; r < w; ++r) z += phi[r] * kbar[size_t(r)];
        const int c_lo = path == 0 ? 0 : half, c_hi = path == 0 ? half : d;
        for (int c = c_lo; c < c_hi; ++c) {
          double num = 0.0;
          for (int64_t m = 0; m < p.n; ++m) {
            double a = 0.0;
            for (int64_t r = 0; r < w; ++r) a += rq[size_t(r)] * rk[size_t(m)][size_t(r)];
            num += a * p.v.at(m, int64_t(h) * d + c);
          }
          out[size_t(t * C + h * d + c)] = num / double(p.n) / (z + 1e-6);
        }
      }
    }
  }
  return out;
}

// Each output's fp32 error scale: (sum_r |R phi|*_r |M|*_rc) / |z| + |x| (sum_r phi*_r kmean*_r) / |z|,
// where a* adds a feature's error budget to its magnitude (rotations bounded
// pairwise) and M*, kmean* are built from the key features' such bounds.
std::vector<double> error_scale(const Problem &p) {
  const int d = p.d, half = d / 2;
  const int64_t C = int64_t(p.heads) * d, w = 2 * d;
  std::vector<double> scale(size_t(p.n * C));
  for (int h = 0; h < p.heads; ++h) {
    const Features f = features(p, h);
    std::vector<double> mabs(size_t(w * d), 0.0), kabs(size_t(w), 0.0), kbar(size_t(w), 0.0);
    std::vector<double> star(static_cast<size_t>(w));
    for (int64_t m = 0; m < p.n; ++m) {
      for (int64_t r = 0; r < w; ++r) {
        const size_t i = size_t(m * w + r);
        star[size_t(r)] = f.psi[i] + f.err_psi[i];
        kabs[size_t(r)] += star[size_t(r)] / double(p.n);
        kbar[size_t(r)] += f.psi[i] / double(p.n);
      }
      const std::vector<double> rs = rotated_bound(p, star.data());
      for (int64_t r = 0; r < w; ++r)
        for (int c = 0; c < d; ++c)
          mabs[size_t(r * d + c)] += rs[size_t(r)] * std::fabs(p.v.at(m, int64_t(h) * d + c)) / double(p.n);
    }
    for (int64_t t = 0; t < p.n; ++t) {
      for (int path = 0; path < 2; ++path) {
        const double *phi = (path == 0 ? f.phi_s : f.phi_o).data() + t * w;
        const double *err = (path == 0 ? f.err_s : f.err_o).data() + t * w;
        double z = 0.0, zs = 0.0;
        for (int64_t r = 0; r < w; ++r) {
          star[size_t(r)] = phi[r] + err[r];
          z += phi[r] * kbar[size_t(r)];
          zs += star[size_t(r)] * kabs[size_t(r)];
        }
        const std::vector<double> rs = rotated_bound(p, star.data());
        const int c_lo = path == 0 ? 0 : half, c_hi = path == 0 ? half : d;
        for (int c = c_lo; c < c_hi; ++c) {
          double num_abs = 0.0;
          for (int64_t r = 0; r < w; ++r) num_abs += rs[size_t(r)] * mabs[size_t(r * d + c)];
          const double den = z + 1e-6;
          const double x_bound = num_abs / den; // bounds |output| too
          scale[size_t(t * C + h * d + c)] = x_bound + x_bound * zs / den;
        }
      }
    }
  }
  return scale;
}

// fp32 budget relative to the error scale: blocked sums over n tokens, the
// exps, the rotations.
double tolerance_factor(int64_t n) { return 32.0 + double(n) / 64.0; }

struct Output {
  Strided out;
  explicit Output(int64_t rows, int64_t cols) : out(rows, cols, 2) {
    for (auto &x : out.data) x = -12345.0f; // sentinel: gaps must stay untouched
  }
};

Output run(const pola::test::IsaKernels &t, const Problem &p, int threads) {
  Output r(p.n, int64_t(p.heads) * p.d);
  t.polarity_attention(p.args(r.out.data.data(), r.out.ld, threads));
  return r;
}

// Every output within factor * eps * scale of `centre` (the worst-case
// bound), the whole output within kRelL2 of it in relative L2 norm (what fp32
// really achieves: ~3e-7 measured, so a systematic error the bound's slack
// would hide still shows), and nothing written between rows.
constexpr double kRelL2 = 4e-6;
void check_close(const Strided &out, const std::vector<double> &centre, const std::vector<double> &scale,
                 double factor, const std::string &what) {
  int64_t bad = 0;
  double worst = 0.0, err2 = 0.0, ref2 = 0.0;
  for (int64_t t = 0; t < out.rows; ++t) {
    for (int64_t c = 0; c < out.cols; ++c) {
      const size_t i = size_t(t * out.cols + c);
      const double tol = factor * pola::test::kEps32 * scale[i] + 1e-30;
      const double err = std::fabs(double(out.at(t, c)) - centre[i]);
      worst = std::max(worst, err / tol);
      if (!(err <= tol)) ++bad; // NaN counts as bad
      err2 += err * err;
      ref2 += centre[i] * centre[i];
    }
    for (int64_t c = out.cols; c < out.ld; ++c)
      if (out.at(t, c) != -12345.0f) ++bad;
  }
  const double rel_l2 = std::sqrt(err2 / ref2);
  INFO(what << ": worst error / tolerance = " << worst << ", relative L2 error = " << rel_l2);
  CHECK(bad == 0);
  CHECK(rel_l2 <= kRelL2); // NaN fails
}

std::vector<double> as_double(const Strided &s) {
  std::vector<double> x(size_t(s.rows * s.cols));
  for (int64_t t = 0; t < s.rows; ++t)
    for (int64_t c = 0; c < s.cols; ++c) x[size_t(t * s.cols + c)] = s.at(t, c);
  return x;
}

} // namespace

TEST_CASE("pp polarity attention: the scalar reference and every ISA match the formula-form oracle") {
  struct Case { int64_t gh, gw; int heads, d; bool rope; };
  const Case cases[] = {{7, 9, 2, 12, true}, {7, 9, 1, 32, true}, {5, 4, 2, 32, false}, {3, 5, 1, 20, true}};
  uint64_t seed = pola::test::base_seed() + 900;
  for (const Case &c : cases) {
    ++seed;
    CAPTURE(seed);
    const Problem p(c.gh, c.gw, c.heads, c.d, c.rope, seed);
    const std::vector<double> x = oracle(p), scale = error_scale(p);
    for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
      INFO("isa=" << std::string(isa_name(t->isa)) << " grid=" << c.gh << "x" << c.gw << " heads=" << c.heads
                  << " d=" << c.d << " rope=" << c.rope);
      check_close(run(*t, p, 1).out, x, scale, tolerance_factor(p.n), "vs oracle");
    }
  }
}

TEST_CASE("pp polarity attention: every ISA matches the scalar reference, 1 and 2 threads bit-identical") {
  const int64_t grids[][2] = {{7, 7}, {14, 14}, {56, 56}, {7, 9}};
  uint64_t seed = pola::test::base_seed() + 1000;
  for (const auto &g : grids)
    for (int heads : {1, 2})
      for (int d : {32, 64, 96, 12})
        for (bool rope : {true, false}) {
          ++seed;
          CAPTURE(seed);
          const Problem p(g[0], g[1], heads, d, rope, seed);
          const Output ref = run(*pola::test::kernels_for(Isa::scalar), p, 1);
          const std::vector<double> centre = as_double(ref.out), scale = error_scale(p);
          for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
            if (t->isa == Isa::scalar) continue;
            INFO("isa=" << std::string(isa_name(t->isa)) << " grid=" << g[0] << "x" << g[1] << " heads=" << heads
                        << " d=" << d << " rope=" << rope);
            const Output one = run(*t, p, 1), two = run(*t, p, 2);
            check_close(one.out, centre, scale, 2 * tolerance_factor(p.n), "vs scalar");
            CHECK(std::memcmp(one.out.data.data(), two.out.data.data(), one.out.data.size() * sizeof(float)) == 0);
          }
        }
}

TEST_CASE("pp polarity attention is bit-identical for 1, 2 and 3 threads over many key chunks") {
  uint64_t seed = pola::test::base_seed() + 1100;
  CAPTURE(seed);
  const Problem p(60, 70, 2, 64, true, seed); // 4200 tokens: 17 key chunks
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    INFO("isa=" << std::string(isa_name(t->isa)));
    const Output one = run(*t, p, 1);
    for (int threads : {2, 3}) {
      const Output many = run(*t, p, threads);
      CHECK(std::memcmp(one.out.data.data(), many.out.data.data(), one.out.data.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("pp polarity attention: a table of the wrong width, or missing weights, is refused") {
  const Problem p(3, 3, 1, 16, true, pola::test::base_seed());
  std::vector<float> out(size_t(p.n * 16));
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    INFO("isa=" << std::string(isa_name(t->isa)));
    PolarityAttnArgs a = p.args(out.data(), 16, 1);
    a.rope.width = 16; // d, not 2d
    CHECK_FALSE(fits<Op::polarity_attention, pola::DType::f32>(t->isa, a));
    CHECK_THROWS_AS(t->polarity_attention(a), std::invalid_argument);
    a = p.args(out.data(), 16, 1);
    a.feature.sigma_opp = nullptr;
    CHECK_THROWS_AS(t->polarity_attention(a), std::invalid_argument);
  }
}
