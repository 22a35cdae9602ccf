// patchify against the layout its header promises, written out index by
// index: row (b, y, x) holds the patch's values in (channel, ky, kx) order,
// for NHWC token rows and NCHW images, at the patch sizes with their own
// unrolled path (2, 4, 8) and one without (3).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/ops/patchify.h"

using namespace pola::ops;

TEST_CASE("patchify puts every source value at (row of its patch, (c * p + ky) * p + kx)") {
  for (bool nchw : {false, true})
    for (int64_t p : {2, 3, 4, 8}) {
      const PatchGrid g{2, 5, 2 * p, 3 * p, p, nchw};
      const int64_t B = g.batch, C = g.channels, H = g.height, W = g.width;
      std::vector<float> src(size_t(B * C * H * W));
      for (size_t i = 0; i < src.size(); ++i) src[i] = float(i); // each value names its place
      std::vector<float> got(src.size(), -1.0f);
      patchify(g, src.data(), got.data(), 2);
      int64_t bad = 0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w)
            for (int64_t c = 0; c < C; ++c) {
              const int64_t from = nchw ? ((b * C + c) * H + h) * W + w : ((b * H + h) * W + w) * C + c;
              const int64_t row = (b * g.out_h() + h / p) * g.out_w() + w / p;
              const int64_t to = row * g.row_width() + (c * p + h % p) * p + w % p;
              bad += got[size_t(to)] != src[size_t(from)];
            }
      INFO("nchw " << nchw << ", patch " << p);
      CHECK(bad == 0);
    }
}
