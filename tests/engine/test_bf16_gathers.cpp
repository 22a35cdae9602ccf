// The bf16 forms of the row gathers that feed bf16 GEMMs (window partition,
// patchify) against their fp32 forms: the same values in the same places,
// rounded to nearest even where floats become bf16.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/ops/patchify.h"
#include "engine/ops/window_partition.h"
#include "kernels/simd/to_bf16_rne.hpp"

using namespace pola::ops;
using pola::kernels::bf16_rne;
using pola::kernels::bf16_to_float;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float &x : v) x = u(rng);
  return v;
}

std::vector<uint16_t> rounded(const std::vector<float> &v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_rne(v[i]);
  return out;
}

// The patches by their definition (patchify.h): row (b, y, x) holds the
// patch's values in the order (channel, ky, kx); an oracle independent of
// patchify's own loops, so no form is compared with itself.
std::vector<float> patches_by_definition(const PatchGrid &g, const std::vector<float> &src) {
  const int64_t P = g.patch, C = g.channels, H = g.height, W = g.width;
  std::vector<float> out;
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t y = 0; y < g.out_h(); ++y)
      for (int64_t x = 0; x < g.out_w(); ++x)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ky = 0; ky < P; ++ky)
            for (int64_t kx = 0; kx < P; ++kx) {
              const int64_t iy = y * P + ky, ix = x * P + kx;
              const int64_t at = g.nchw ? ((b * C + c) * H + iy) * W + ix : ((b * H + iy) * W + ix) * C + c;
              out.push_back(src[size_t(at)]);
            }
  return out;
}

} // namespace

TEST_CASE("window_partition of bf16 rows moves them as the fp32 partition does, padding as zeros") {
  for (int64_t shift : {0, 1}) {
    WindowGrid g{2, 3, 5, 7, 2, shift, 4, 6};  // odd channels, padded grid
    const std::vector<float> src = random_floats(size_t(2 * 3 * 5 * 7), 11);
    std::vector<float> dst(size_t(g.window_rows() * 7));
    window_partition(g, src.data(), dst.data(), 2);
    const std::vector<uint16_t> src_h = rounded(src);
    std::vector<uint16_t> dst_h(dst.size(), 0xabcd);
    window_partition(g, src_h.data(), dst_h.data(), 2);
    CHECK(dst_h == rounded(dst));
  }
}

TEST_CASE("patchify into bf16 rounds the fp32 patches; from bf16 it copies or widens them") {
  for (bool nchw : {true, false}) {
    PatchGrid g{2, 3, 8, 12, 4, nchw};
    const int64_t n_out = g.batch * g.out_h() * g.out_w() * g.row_width();
    const std::vector<float> src = random_floats(size_t(2 * 3 * 8 * 12), nchw ? 21 : 22);
    const std::vector<float> want = patches_by_definition(g, src);
    REQUIRE(int64_t(want.size()) == n_out);
    std::vector<float> fp32(static_cast<size_t>(n_out));
    patchify(g, src.data(), fp32.data(), 2);
    CHECK(fp32 == want);

    std::vector<uint16_t> f_to_h(size_t(n_out), 0xabcd);
    patchify(g, src.data(), false, f_to_h.data(), true, 2);
    CHECK(f_to_h == rounded(want));

    // From bf16 source values: the patches of the rounded source.
    const std::vector<uint16_t> src_h = rounded(src);
    std::vector<uint16_t> h_to_h(size_t(n_out), 0xabcd);
    patchify(g, src_h.data(), true, h_to_h.data(), true, 2);
    CHECK(h_to_h == rounded(want));
    std::vector<float> h_to_f(size_t(n_out), -1.0f);
    patchify(g, src_h.data(), true, h_to_f.data(), false, 2);
    int64_t bad = 0;
    for (int64_t i = 0; i < n_out; ++i) bad += h_to_f[size_t(i)] != bf16_to_float(bf16_rne(want[size_t(i)]));
    CHECK(bad == 0);

    std::vector<float> f_to_f(size_t(n_out), -1.0f);
    patchify(g, src.data(), false, f_to_f.data(), false, 2);
    CHECK(f_to_f == want);
  }
}
