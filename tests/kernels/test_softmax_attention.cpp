// Global softmax attention with 2-D RoPE on every ISA: against a
// double-precision attention written here from SPEC-polaformerpp 2.6 and 2.8
// (rotation, d^-1/2 on the rotated q, full softmax per row), against the
// scalar reference, and thread counts 1 vs 2 bit for bit. q, k and v are
// column blocks of one [Q|K|V|G] matrix with NaN gaps past its rows, as the
// model lays them out.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"

using namespace pola::kernels;
using pola::DType;
using pola::test::Strided;

namespace {

constexpr float kUntouched = -12345.0f;

// The width-D table of SPEC 2.6 for a rows x cols grid: theta_j =
// 10000^(-j/(m-1)), m = D/4, each repeated twice; the first D/2 dims take the
// row index, the rest the column index; angles in fp32 as the model has them.
struct Rope {
  std::vector<float> cos, sin;
  Rope(int64_t rows, int64_t cols, int D) : cos(size_t(rows * cols * D)), sin(cos.size()) {
    const int m = D / 4;
    std::vector<float> angle(size_t(D / 2));
    for (int j = 0; j < m; ++j) {
      const double e = m > 1 ? double(j) / (m - 1) : 0.0;
      angle[size_t(2 * j)] = angle[size_t(2 * j + 1)] = float(1.0 / std::pow(10000.0, e));
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        for (int k = 0; k < D; ++k) {
          const float a = k < D / 2 ? float(r) * angle[size_t(k)] : float(c) * angle[size_t(k - D / 2)];
          cos[size_t((r * cols + c) * D + k)] = float(std::cos(double(a)));
          sin[size_t((r * cols + c) * D + k)] = float(std::sin(double(a)));
        }
  }
};

struct AttnProblem {
  int64_t n; int heads, d;
  int64_t grid_h, grid_w; // 0: no RoPE
  Strided qkvg;
  std::vector<Rope> rope;
  AttnProblem(int64_t nn, int h, int dd, int64_t gh, int64_t gw, float qk_range, uint64_t seed)
      : n(nn), heads(h), d(dd), grid_h(gh), grid_w(gw), qkvg(nn, 4 * int64_t(h) * dd, 5) {
    std::mt19937_64 rng(seed);
    const int64_t C = int64_t(h) * dd;
    std::uniform_real_distribution<float> qk(-qk_range, qk_range), v(-0.5f, 1.5f);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < 4 * C; ++c) qkvg.at(r, c) = c >= 2 * C && c < 3 * C ? v(rng) : qk(rng);
    if (gh) rope.emplace_back(gh, gw, dd);
  }
  RopeTable table() const {
    RopeTable t;
    if (!rope.empty()) { t.cos = rope[0].cos.data(); t.sin = rope[0].sin.data(); t.width = d; }
    return t;
  }
};

// From SPEC 2.8 in double: per head, q~ = R q * d^-1/2, k~ = R k,
// out = softmax(q~ k~^T) v, with R the rotation of SPEC 2.6.
std::vector<double> oracle(const AttnProblem &p) {
  const int64_t C = int64_t(p.heads) * p.d, n = p.n;
  const int d = p.d;
  const double scale = 1.0 / std::sqrt(double(d));
  std::vector<double> out(size_t(n * C));
  const auto rotated = [&](int64_t t, int64_t col0, double s) {
    std::vector<double> y(static_cast<size_t>(d));
    for (int i = 0; i < d; i += 2) {
      const double x0 = p.qkvg.at(t, col0 + i), x1 = p.qkvg.at(t, col0 + i + 1);
      double c = 1, sn = 0;
      if (!p.rope.empty()) {
        c = p.rope[0].cos[size_t(t * d + i)];
        sn = p.rope[0].sin[size_t(t * d + i)];
      }
      y[size_t(i)] = (x0 * c - x1 * sn) * s;
      y[size_t(i + 1)] = (x1 * c + x0 * sn) * s;
    }
    return y;
  };
  for (int h = 0; h < p.heads; ++h) {
    std::vector<std::vector<double>> q, k;
    for (int64_t t = 0; t < n; ++t) {
      q.push_back(rotated(t, int64_t(h) * d, scale));
      k.push_back(rotated(t, C + int64_t(h) * d, 1.0));
    }
    std::vector<double> s(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      double mx = -1e300;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += q[size_t(i)][size_t(c)] * k[size_t(j)][size_t(c)];
        s[size_t(j)] = dot;
        mx = std::max(mx, dot);
      }
      double sum = 0;
      for (double &e : s) sum += (e = std::exp(e - mx));
      for (int c = 0; c < d; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += s[size_t(j)] * p.qkvg.at(j, 2 * C + int64_t(h) * d + c);
        out[size_t(i * C + h * d + c)] = acc / sum;
      }
    }
  }
  return out;
}

Strided run(const AttnProblem &p, KernelFn<Op::softmax_attention, DType::f32> fn, int threads) {
  const int64_t C = int64_t(p.heads) * p.d;
  Strided out(p.n, C, 3);
  for (float &v : out.data) v = kUntouched;
  GlobalAttnArgs a;
  a.n = p.n; a.heads = p.heads; a.head_dim = p.d; a.scale = 1.0f / std::sqrt(float(p.d));
  a.q = p.qkvg.data.data(); a.ld_q = p.qkvg.ld;
  a.k = a.q + C; a.ld_k = p.qkvg.ld;
  a.v = a.q + 2 * C; a.ld_v = p.qkvg.ld;
  a.rope = p.table();
  a.out = out.data.data(); a.ld_out = out.ld; a.threads = threads;
  fn(a);
  return out;
}

} // namespace

TEST_CASE("softmax_attention matches the double attention and the scalar reference on every ISA") {
  struct Shape { int64_t n; int heads, d; int64_t gh, gw; float qk_range; };
  const Shape shapes[] = {
      {1, 2, 32, 1, 1, 2.0f},   {49, 12, 32, 7, 7, 2.0f},  {196, 4, 32, 14, 14, 2.0f}, {35, 3, 64, 5, 7, 2.0f},
      {50, 2, 36, 5, 10, 2.0f}, {17, 1, 20, 0, 0, 2.0f},   {129, 2, 64, 3, 43, 3.0f},  {257, 1, 32, 0, 0, 4.0f},
      {300, 2, 4, 12, 25, 3.0f}, {90, 1, 12, 9, 10, 2.0f}, {4200, 1, 32, 60, 70, 3.0f}};
  uint64_t seed = pola::test::base_seed() + 1300;
  for (const Shape &s : shapes) {
    const AttnProblem p(s.n, s.heads, s.d, s.gh, s.gw, s.qk_range, ++seed);
    const std::vector<double> want = oracle(p);
    double max_out = 0;
    for (double v : want) max_out = std::max(max_out, std::fabs(v));
    const double tol = 1e-5 * max_out;
    const int64_t C = int64_t(s.heads) * s.d;
    Strided ref_out(1, 1, 0);
    for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
      CAPTURE(seed);
      INFO("isa=" << std::string(isa_name(t->isa)) << " n=" << s.n << " heads=" << s.heads << " d=" << s.d
                  << " grid=" << s.gh << "x" << s.gw);
      const Strided out1 = run(p, t->softmax_attention, 1);
      if (t->isa == Isa::scalar) ref_out = out1;
      if (s.n <= 1000) { // the big case: one thread count (it is the same code path)
        // 2 and 3 threads take whole heads where they split evenly (or there
        // are many) and the two-phase split otherwise; 1 always whole heads.
        for (int threads : {2, 3}) {
          const Strided out2 = run(p, t->softmax_attention, threads);
          CHECK_MESSAGE(std::memcmp(out1.data.data(), out2.data.data(), out1.data.size() * sizeof(float)) == 0,
                        "threads=" << threads);
        }
      }
      int64_t bad = 0, bad_ref = 0, touched = 0;
      double worst = 0;
      for (int64_t r = 0; r < s.n; ++r) {
        for (int64_t c = 0; c < C; ++c) {
          const double err = std::fabs(out1.at(r, c) - want[size_t(r * C + c)]);
          worst = std::max(worst, err / tol);
          if (!(err <= tol)) ++bad;
          if (!(std::fabs(out1.at(r, c) - ref_out.at(r, c)) <= tol)) ++bad_ref;
        }
        for (int64_t c = C; c < out1.ld; ++c) touched += out1.at(r, c) != kUntouched;
      }
      INFO("worst error / tolerance = " << worst);
      CHECK(bad == 0);
      CHECK(bad_ref == 0);
      CHECK(touched == 0);
    }
  }
}

TEST_CASE("softmax_attention refuses a RoPE table of another width on every ISA") {
  const AttnProblem p(4, 1, 8, 2, 2, 1.0f, 7);
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    INFO("isa=" << std::string(isa_name(t->isa)));
    Strided out(4, 8, 0);
    GlobalAttnArgs a;
    a.n = 4; a.heads = 1; a.head_dim = 8;
    a.q = a.k = a.v = p.qkvg.data.data(); a.ld_q = a.ld_k = a.ld_v = p.qkvg.ld;
    a.rope = p.table();
    a.rope.width = 16;
    a.out = out.data.data(); a.ld_out = 8;
    CHECK_THROWS_AS(t->softmax_attention(a), std::invalid_argument);
  }
}
