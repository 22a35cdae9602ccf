// ops::Conv2d in bf16 precision (bf16 source rows and weights, fp32
// accumulation) against its fp32 form on the same values, i.e. inputs and
// weights rounded to bf16 first: only the order of the fp32 sums may differ.
// Both are checked against a direct double-precision convolution, so a
// layout mistake shared by the two forms fails too. The shapes are
// PolaFormer++'s dense convs: the 3-channel first stem conv, a stride-1 stem
// conv and a stride-2 downsampling one, on odd grids.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/dnnl_context.h"
#include "engine/ops/conv2d.h"
#include "kernels/isa.h"
#include "kernels/simd/to_bf16_rne.hpp"

using namespace pola;
using pola::kernels::bf16_rne;
using pola::kernels::bf16_to_float;

namespace {

// Random values already representable in bf16, and their bf16 bits.
struct Bf16Values {
  std::vector<float> f;
  std::vector<uint16_t> bits;
};
Bf16Values random_bf16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  Bf16Values v;
  for (size_t i = 0; i < n; ++i) {
    v.bits.push_back(bf16_rne(u(rng)));
    v.f.push_back(bf16_to_float(v.bits.back()));
  }
  return v;
}

int64_t out_side(const ops::Conv2dShape &s, int64_t in) { return (in + 2 * s.pad - s.kernel) / s.stride + 1; }

// The convolution by its definition over NHWC rows, in double; `mag` gets
// sum |w x| + |b| per output, the scale of its rounding error.
std::vector<double> conv_by_definition(const ops::Conv2dShape &s, const std::vector<float> &x,
                                       const std::vector<float> &w, const std::vector<float> &b,
                                       std::vector<double> &mag) {
  const int64_t oh = out_side(s, s.in_h), ow = out_side(s, s.in_w), K = s.kernel;
  std::vector<double> y;
  mag.clear();
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t o = 0; o < s.out_ch; ++o) {
          double acc = b[size_t(o)], m = std::fabs(b[size_t(o)]);
          for (int64_t c = 0; c < s.in_ch; ++c)
            for (int64_t ky = 0; ky < K; ++ky)
              for (int64_t kx = 0; kx < K; ++kx) {
                const int64_t iy = oy * s.stride - s.pad + ky, ix = ox * s.stride - s.pad + kx;
                if (iy < 0 || iy >= s.in_h || ix < 0 || ix >= s.in_w) continue;
                const double t = double(w[size_t(((o * s.in_ch + c) * K + ky) * K + kx)]) *
                                 x[size_t(((n * s.in_h + iy) * s.in_w + ix) * s.in_ch + c)];
                acc += t;
                m += std::fabs(t);
              }
          y.push_back(acc);
          mag.push_back(m);
        }
  return y;
}

} // namespace

TEST_CASE("a bf16 Conv2d matches the fp32 one on bf16-rounded inputs and weights") {
  if (kernels::active_isa() < kernels::Isa::avx512_bf16) {
    MESSAGE("skipped: no native bf16 instructions here");
    return;
  }
  struct Case {
    int64_t in_ch, h, w, out_ch, stride;
  };
  for (const Case &k : {Case{3, 13, 10, 16, 2}, Case{16, 9, 7, 16, 1}, Case{32, 7, 9, 64, 2}}) {
    ops::Conv2dShape s;
    s.batch = 2;
    s.in_ch = k.in_ch;
    s.in_h = k.h;
    s.in_w = k.w;
    s.out_ch = k.out_ch;
    s.kernel = 3;
    s.stride = k.stride;
    s.pad = 1;
    const Bf16Values x = random_bf16(size_t(s.batch * s.in_h * s.in_w * s.in_ch), 7);
    const Bf16Values w = random_bf16(size_t(s.out_ch * s.in_ch * 9), 8);
    std::vector<float> b(size_t(s.out_ch));
    for (size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * float(i % 5) - 0.5f;
    std::vector<double> mag;
    const std::vector<double> want = conv_by_definition(s, x.f, w.f, b, mag);

    PackedWeightCache cache;
    dnnl::stream stream(cpu_engine());
    ops::Conv2d fp32(s, w.f.data(), b.data(), cache);
    // The same weights stored as bf16 (a BF16 model file), widened exactly by the fp32 form.
    ops::Conv2d fp32_stored(s, w.bits.data(), /*weight_stored_bf16=*/true, b.data(), cache);
    ops::Conv2dShape sb = s;
    sb.precision = Precision::bf16;
    ops::Conv2d bf16(sb, w.f.data(), false, b.data(), cache);
    ops::Conv2d bf16_stored(sb, w.bits.data(), true, b.data(), cache);
    std::vector<float> y32(want.size()), y32s(want.size()), y16(want.size()), y16s(want.size());
    fp32.run(stream, x.f.data(), y32.data());
    fp32_stored.run(stream, x.f.data(), y32s.data());
    bf16.run(stream, x.bits.data(), y16.data());
    bf16_stored.run(stream, x.bits.data(), y16s.data());
    stream.wait();

    INFO("in_ch " << k.in_ch << ", stride " << k.stride);
    int64_t far32 = 0, far16 = 0, differ_stored = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      // fp32 sums of up to 9 * in_ch products, in whatever order: a few ulps of the magnitude.
      const double tol = 1e-5 * mag[i];
      far32 += std::fabs(y32[i] - want[i]) > tol;
      far16 += std::fabs(y16[i] - want[i]) > tol || std::fabs(y16[i] - y32[i]) > tol;
      differ_stored += y32s[i] != y32[i] || y16s[i] != y16[i];
    }
    CHECK(far32 == 0);
    CHECK(far16 == 0);
    CHECK(differ_stored == 0);
  }
}
