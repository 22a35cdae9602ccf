// Depthwise k x k convolution (zero padding k/2) on every ISA: against a
// double-precision convolution written here from the definition, against the
// scalar reference, and thread counts 1 vs 2 bit for bit. Shapes cover
// channel tails, grids smaller than the kernel, batches, odd k other than
// 3 and 5 (7 takes the sliding tiles, 1 and 9 the generic ones), a source
// that is a column slice of a wider matrix, and every add_src / accumulate
// combination.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "helpers.h"
#include "kernels/registry.h"
#include "kernels/simd/to_bf16_rne.hpp"

using namespace pola::kernels;
using pola::DType;
using pola::test::Strided;

namespace {

constexpr float kUntouched = -12345.0f;

struct ConvProblem {
  int64_t batch, height, width, channels;
  int k;
  int64_t offset;          // the source's first column inside `src` (a slice of wider rows)
  Strided src, dst0;       // dst0: what dst holds before the call (read when accumulating)
  std::vector<float> weight, bias;
  ConvProblem(int64_t b, int64_t h, int64_t w, int64_t c, int kk, int64_t slice_extra, uint64_t seed)
      : batch(b), height(h), width(w), channels(c), k(kk), offset(slice_extra ? c : 0),
        src(b * h * w, c + offset, slice_extra ? slice_extra : 3), dst0(b * h * w, c, 5),
        weight(size_t(c * kk * kk)), bias(size_t(c)) {
    std::mt19937_64 rng(seed);
    pola::test::fill(src, rng, -2.0f, 2.0f, 0.02);
    pola::test::fill(dst0, rng, -1.0f, 1.0f);
    for (int64_t r = 0; r < dst0.rows; ++r)
      for (int64_t col = c; col < dst0.ld; ++col) dst0.at(r, col) = kUntouched;
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    for (float &x : weight) x = u(rng);
    for (float &x : bias) x = u(rng);
  }
  float in(int64_t pixel, int64_t c) const { return src.at(pixel, offset + c); }
};

// From the definition, in double: out[p, c] = bias[c] + sum over the taps
// inside the image of w[c, dy, dx] src[p + (dy - k/2, dx - k/2), c] (+ src) (+ old dst).
std::vector<double> oracle(const ConvProblem &p, bool with_bias, bool add_src, bool accumulate) {
  const int64_t C = p.channels, H = p.height, W = p.width, r = p.k / 2;
  std::vector<double> out(size_t(p.batch * H * W * C));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t pixel = (b * H + y) * W + x;
          double s = with_bias ? p.bias[size_t(c)] : 0.0;
          for (int64_t u = -r; u <= r; ++u)
            for (int64_t v = -r; v <= r; ++v) {
              if (y + u < 0 || y + u >= H || x + v < 0 || x + v >= W) continue;
              s += double(p.weight[size_t((c * p.k + u + r) * p.k + v + r)]) * p.in(pixel + u * W + v, c);
            }
          if (add_src) s += p.in(pixel, c);
          if (accumulate) s += p.dst0.at(pixel, c);
          out[size_t(pixel * C + c)] = s;
        }
  return out;
}

Strided run(const ConvProblem &p, KernelFn<Op::depthwise_conv, DType::f32> fn, bool with_bias, bool add_src,
            bool accumulate, int threads) {
  Strided dst = p.dst0;
  DepthwiseConvArgs a;
  a.batch = p.batch; a.height = p.height; a.width = p.width; a.channels = p.channels; a.kernel = p.k;
  a.src = p.src.data.data() + p.offset; a.ld_src = p.src.ld;
  a.weight = p.weight.data(); a.bias = with_bias ? p.bias.data() : nullptr;
  a.dst = dst.data.data(); a.ld_dst = dst.ld;
  a.add_src = add_src; a.accumulate = accumulate; a.threads = threads;
  fn(a);
  return dst;
}

} // namespace

TEST_CASE("depthwise_conv matches the double convolution and the scalar reference on every ISA") {
  struct Shape { int64_t batch, h, w, c; int k; int64_t slice_extra; };
  const Shape shapes[] = {
      {1, 56, 56, 32, 3, 0}, {1, 14, 14, 64, 5, 0}, {2, 7, 9, 19, 5, 0},   {1, 1, 1, 16, 3, 0},
      {1, 1, 1, 21, 5, 0},   {1, 2, 3, 17, 5, 0},   {3, 2, 3, 40, 3, 0},   {1, 6, 10, 24, 7, 0},
      {2, 5, 4, 2240, 3, 0}, {1, 9, 8, 48, 5, 96},  {2, 4, 11, 33, 3, 70}, {1, 3, 13, 8, 1, 0},
      {1, 5, 30, 24, 7, 0},  {1, 12, 13, 20, 9, 0}, {2, 3, 4, 16, 9, 0},
      // Row walks of 8 (AVX-512) and 4 (AVX2) pixel tiles: a whole interior
      // tile then a one-pixel tail, two whole tiles that both touch a border,
      // a tail-only row wider than the kernel, a channel tail.
      {1, 3, 17, 35, 3, 0},  {1, 4, 16, 32, 3, 0},  {1, 4, 26, 16, 5, 20},  {1, 2, 7, 48, 7, 0}};
  uint64_t seed = pola::test::base_seed() + 1200;
  for (const Shape &s : shapes) {
    const ConvProblem p(s.batch, s.h, s.w, s.c, s.k, s.slice_extra, ++seed);
    for (int mode = 0; mode < 8; ++mode) {
      const bool add_src = mode & 1, accumulate = mode & 2, with_bias = !(mode & 4);
      if (s.h * s.w > 400 && mode != 0 && mode != 3) continue; // big grids: two modes suffice
      const std::vector<double> want = oracle(p, with_bias, add_src, accumulate);
      double max_out = 0;
      for (double v : want) max_out = std::max(max_out, std::fabs(v));
      const double tol = 1e-5 * max_out;
      Strided ref_out(1, 1, 0);
      for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
        CAPTURE(seed);
        INFO("isa=" << std::string(isa_name(t->isa)) << " batch=" << s.batch << " h=" << s.h << " w=" << s.w
                    << " c=" << s.c << " k=" << s.k << " ld_src=" << p.src.ld << " bias=" << with_bias
                    << " add_src=" << add_src << " accumulate=" << accumulate);
        const Strided out1 = run(p, t->depthwise_conv, with_bias, add_src, accumulate, 1);
        const Strided out2 = run(p, t->depthwise_conv, with_bias, add_src, accumulate, 2);
        CHECK(std::memcmp(out1.data.data(), out2.data.data(), out1.data.size() * sizeof(float)) == 0);
        if (t->isa == Isa::scalar) ref_out = out1;
        int64_t bad = 0, bad_ref = 0, touched = 0;
        double worst = 0;
        for (int64_t r = 0; r < out1.rows; ++r) {
          for (int64_t c = 0; c < s.c; ++c) {
            const double err = std::fabs(out1.at(r, c) - want[size_t(r * s.c + c)]);
            worst = std::max(worst, err / tol);
            if (!(err <= tol)) ++bad;
            if (!(std::fabs(out1.at(r, c) - ref_out.at(r, c)) <= tol)) ++bad_ref;
          }
          for (int64_t c = s.c; c < out1.ld; ++c) touched += out1.at(r, c) != kUntouched;
        }
        INFO("worst error / tolerance = " << worst);
        CHECK(bad == 0);
        CHECK(bad_ref == 0);
        CHECK(touched == 0);
      }
    }
  }
}

// dst_bf16: each value is bf16_rne of what the fp32 output holds (the same
// sum, rounded once more), in rows of stride ld_dst; the columns past the
// channels and dst stay untouched; 1 and 2 threads agree bit for bit.
TEST_CASE("depthwise_conv writes bf16 rows with dst_bf16 on every ISA") {
  struct Shape { int64_t batch, h, w, c; int k; int64_t slice_extra; };
  const Shape shapes[] = {{1, 9, 19, 48, 3, 0}, {2, 5, 6, 21, 5, 30}, {1, 4, 11, 16, 7, 0}, {1, 3, 5, 24, 9, 0}};
  uint64_t seed = pola::test::base_seed() + 1250;
  for (const Shape &s : shapes) {
    const ConvProblem p(s.batch, s.h, s.w, s.c, s.k, s.slice_extra, ++seed);
    const int64_t ld = s.c + 5, rows = s.batch * s.h * s.w;
    for (int add_src = 0; add_src < 2; ++add_src)
      for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
        CAPTURE(seed);
        INFO("isa=" << std::string(isa_name(t->isa)) << " h=" << s.h << " w=" << s.w << " c=" << s.c
                    << " k=" << s.k << " add_src=" << add_src);
        const Strided want = run(p, t->depthwise_conv, true, add_src, false, 1);
        for (int threads : {1, 2}) {
          std::vector<uint16_t> got(size_t(rows * ld), 0xabcd);
          float sentinel = kUntouched;
          DepthwiseConvArgs a;
          a.batch = p.batch; a.height = p.height; a.width = p.width; a.channels = p.channels; a.kernel = p.k;
          a.src = p.src.data.data() + p.offset; a.ld_src = p.src.ld;
          a.weight = p.weight.data(); a.bias = p.bias.data();
          a.dst = &sentinel; a.ld_dst = ld; a.dst_bf16 = got.data();
          a.add_src = add_src; a.threads = threads;
          t->depthwise_conv(a);
          int64_t bad = 0, touched = 0;
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < s.c; ++c) bad += got[size_t(r * ld + c)] != pola::kernels::bf16_rne(want.at(r, c));
            for (int64_t c = s.c; c < ld; ++c) touched += got[size_t(r * ld + c)] != 0xabcd;
          }
          INFO("threads=" << threads);
          CHECK(bad == 0);
          CHECK(touched == 0);
          CHECK(sentinel == kUntouched);
        }
      }
  }
}

TEST_CASE("depthwise_conv refuses dst_bf16 with accumulate on every ISA") {
  float x[4] = {}, w[9] = {}, y[4] = {};
  uint16_t yb[4] = {};
  DepthwiseConvArgs a;
  a.height = 2; a.width = 2; a.channels = 1; a.kernel = 3;
  a.src = x; a.ld_src = 1; a.weight = w; a.dst = y; a.ld_dst = 1; a.dst_bf16 = yb; a.accumulate = true;
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    INFO("isa=" << std::string(isa_name(t->isa)));
    CHECK_THROWS_AS(t->depthwise_conv(a), std::invalid_argument);
  }
}

TEST_CASE("depthwise_conv refuses an even kernel size on every ISA") {
  float x[4] = {}, w[16] = {}, y[4] = {};
  DepthwiseConvArgs a;
  a.height = 2; a.width = 2; a.channels = 1; a.kernel = 4;
  a.src = x; a.ld_src = 1; a.weight = w; a.dst = y; a.ld_dst = 1;
  for (const pola::test::IsaKernels *t : pola::test::available_tables()) {
    INFO("isa=" << std::string(isa_name(t->isa)));
    CHECK_THROWS_AS(t->depthwise_conv(a), std::invalid_argument);
  }
}
