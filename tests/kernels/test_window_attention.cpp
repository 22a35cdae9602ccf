// Swin window attention against a double-precision oracle on every ISA.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "helpers.h"
#include "kernels/kernels.h"

using namespace pola::kernels;
using pola::test::Strided;

namespace {

struct WinProblem {
  int64_t windows; int t, heads, d; int64_t n_mask;
  float scale;
  Strided qkv;
  std::vector<float> bias, mask;
  WinProblem(int64_t w, int tt, int h, int dd, int64_t nm, uint64_t seed)
      : windows(w), t(tt), heads(h), d(dd), n_mask(nm), scale(1.0f / std::sqrt(float(dd))),
        qkv(w * tt, 3 * int64_t(h) * dd, 7), bias(size_t(h * tt * tt)), mask(size_t(nm * tt * tt)) {
    std::mt19937_64 rng(seed);
    pola::test::fill(qkv, rng, -3.0f, 3.0f, 0.03);
    std::uniform_real_distribution<float> b(-2.0f, 2.0f), z(0.0f, 1.0f);
    for (float &x : bias) x = b(rng);
    for (float &x : mask) x = z(rng) < 0.3f ? -100.0f : 0.0f; // Swin's region mask values
  }
};

// Per row: the result, and an error scale (max |v| times (1 + largest |score| term)).
void oracle(const WinProblem &p, std::vector<double> &x, std::vector<double> &scale_of_row) {
  const int64_t C = int64_t(p.heads) * p.d;
  x.assign(size_t(p.windows * p.t * C), 0.0);
  scale_of_row.assign(x.size(), 0.0);
  for (int64_t w = 0; w < p.windows; ++w)
    for (int h = 0; h < p.heads; ++h)
      for (int i = 0; i < p.t; ++i) {
        std::vector<double> s(size_t(p.t));
        double mx = -1e300, abs_max = 0;
        for (int j = 0; j < p.t; ++j) {
          double dot = 0, dot_abs = 0;
          for (int c = 0; c < p.d; ++c) {
            const double term = double(p.qkv.at(w * p.t + i, h * p.d + c)) * double(p.scale) *
                                double(p.qkv.at(w * p.t + j, C + h * p.d + c));
            dot += term; dot_abs += std::fabs(term);
          }
          dot += p.bias[size_t((h * p.t + i) * p.t + j)];
          if (p.n_mask) dot += p.mask[size_t(((w % p.n_mask) * p.t + i) * p.t + j)];
          s[size_t(j)] = dot;
          mx = std::max(mx, dot);
          abs_max = std::max(abs_max, dot_abs + 102.0);
        }
        double sum = 0;
        for (double &e : s) { e = std::exp(e - mx); sum += e; }
        for (int c = 0; c < p.d; ++c) {
          double acc = 0, vmax = 0;
          for (int j = 0; j < p.t; ++j) {
            const double v = p.qkv.at(w * p.t + j, 2 * C + h * p.d + c);
            acc += s[size_t(j)] * v;
            vmax = std::max(vmax, std::fabs(v));
          }
          const size_t k = size_t((w * p.t + i) * C + h * p.d + c);
          x[k] = acc / sum;
          scale_of_row[k] = vmax * (1.0 + abs_max);
        }
      }
}

} // namespace

TEST_CASE("window_attention matches the double oracle on every ISA") {
  struct Shape { int64_t windows; int t, heads, d; int64_t n_mask; };
  const Shape shapes[] = {{1, 1, 1, 32, 0}, {4, 49, 3, 32, 4}, {3, 144, 2, 32, 2},
                          {5, 7, 2, 20, 0}, {2, 50, 1, 16, 1},  {2, 17, 2, 64, 0}};
  uint64_t seed = pola::test::base_seed() + 400;
  for (const Shape &s : shapes) {
    ++seed;
    const WinProblem p(s.windows, s.t, s.heads, s.d, s.n_mask, seed);
    std::vector<double> x, scale;
    oracle(p, x, scale);
    const int64_t C = int64_t(p.heads) * p.d;
    for (const KernelTable *t : pola::test::available_tables())
      for (int threads : {1, 2}) {
        CAPTURE(seed);
        INFO("isa=" << std::string(isa_name(t->isa)) << " threads=" << threads << " windows=" << s.windows
                    << " t=" << s.t << " heads=" << s.heads << " d=" << s.d << " n_mask=" << s.n_mask);
        Strided out(p.windows * p.t, C, 3);
        for (auto &v : out.data) v = -12345.0f;
        WindowAttnArgs a;
        a.windows = p.windows; a.tokens = p.t; a.heads = p.heads; a.head_dim = p.d; a.scale = p.scale;
        a.qkv = p.qkv.data.data(); a.ld_qkv = p.qkv.ld; a.bias = p.bias.data();
        a.mask = p.n_mask ? p.mask.data() : nullptr; a.n_mask = p.n_mask;
        a.out = out.data.data(); a.ld_out = out.ld; a.threads = threads;
        t->window_attention(a);
        int64_t bad = 0;
        double worst = 0;
        for (int64_t r = 0; r < out.rows; ++r) {
          for (int64_t c = 0; c < C; ++c) {
            const size_t k = size_t(r * C + c);
            const double tol = 16 * pola::test::kEps32 * scale[k] + 1e-30;
            const double err = std::fabs(out.at(r, c) - x[k]);
            worst = std::max(worst, err / tol);
            if (!(err <= tol)) ++bad;
          }
          for (int64_t c = C; c < out.ld; ++c) if (out.at(r, c) != -12345.0f) ++bad;
        }
        INFO("worst error / tolerance = " << worst);
        CHECK(bad == 0);
      }
  }
}
