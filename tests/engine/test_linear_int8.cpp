// ops::QuantizedLinear against the scheme in exact arithmetic: the int32 sum
// of int8 products, times s_in * s_w[o], plus the bias, plus dst when
// accumulating; on strided source and destination rows, odd shapes, and with
// a bias large enough that applying it before or after the scales differs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/dnnl_context.h"
#include "engine/ops/linear_int8.h"

using namespace pola;

TEST_CASE("QuantizedLinear computes s_in * s_w[o] * sum(q_x q_w) + b[o] (+ dst)") {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> q(-127, 127);
  std::uniform_real_distribution<float> u(0.5f, 2.0f), b(-40.f, 40.f);
  struct Shape { int64_t rows, in, out; };
  for (const Shape sh : {Shape{1, 16, 8}, Shape{5, 67, 33}, Shape{49, 96, 288}, Shape{200, 384, 96}})
    for (bool bias : {false, true})
      for (bool accumulate : {false, true}) {
        INFO("rows=" << sh.rows << " in=" << sh.in << " out=" << sh.out << " bias=" << bias << " acc=" << accumulate);
        const int64_t ld_src = sh.in + 5, ld_dst = sh.out + 3;
        std::vector<int8_t> x(sh.rows * ld_src), w(sh.out * sh.in);
        for (auto &v : x) v = int8_t(q(rng));
        for (auto &v : w) v = int8_t(q(rng));
        std::vector<float> ws(sh.out), bb(sh.out), dst(sh.rows * ld_dst);
        for (auto &v : ws) v = u(rng) * 1e-3f;
        for (auto &v : bb) v = b(rng);
        for (auto &v : dst) v = b(rng);
        const float s_in = 0.0123f;
        PackedWeightCache cache;
        ops::QuantizedLinearParams p{w.data(), ws.data(), s_in, bias ? bb.data() : nullptr, sh.in, sh.out};
        ops::QuantizedLinear op(p, ops::LinearShape{sh.rows, ld_src, ld_dst, accumulate, false}, cache);
        std::vector<float> want = dst;
        for (int64_t r = 0; r < sh.rows; ++r)
          for (int64_t o = 0; o < sh.out; ++o) {
            int64_t acc = 0;
            for (int64_t i = 0; i < sh.in; ++i) acc += int64_t(x[r * ld_src + i]) * w[o * sh.in + i];
            const double y = double(s_in) * ws[o] * double(acc) + (bias ? bb[o] : 0.0);
            want[r * ld_dst + o] = float(y + (accumulate ? dst[r * ld_dst + o] : 0.0));
          }
        dnnl::stream stream(cpu_engine());
        op.run(stream, x.data(), dst.data());
        double worst = 0;
        int64_t untouched_bad = 0;
        for (int64_t r = 0; r < sh.rows; ++r) {
          for (int64_t o = 0; o < sh.out; ++o)
            worst = std::max(worst, std::fabs(double(dst[r * ld_dst + o]) - want[r * ld_dst + o]) /
                                        (1.0 + std::fabs(want[r * ld_dst + o])));
          for (int64_t o = sh.out; o < ld_dst; ++o) untouched_bad += dst[r * ld_dst + o] != want[r * ld_dst + o];
        }
        CHECK(worst < 1e-5);
        CHECK(untouched_bad == 0);
      }
}
