// ops::FusedMlp in int8 against the unfused int8 MLP on the same rows: the
// whole source quantized with fc1's input scale, fc1 over all rows, GELU,
// the hidden rows quantized with fc2's input scale, fc2 accumulated into dst.
// The same kernels on the same values, so the results must be bit-identical,
// on strided rows, with a tail chunk, at one and two threads.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/dnnl_context.h"
#include "engine/ops/fused_mlp.h"
#include "engine/ops/linear_int8.h"
#include "kernels/isa.h"
#include "kernels/registry.h"

using namespace pola;

TEST_CASE("int8 FusedMlp equals the unfused int8 MLP bit for bit") {
  const int64_t rows = 3 * ops::FusedMlp::kChunkRowsFp32 + 11, in = 40, hidden = 160;
  const int64_t ld_src = in + 5, ld_dst = in + 3;
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> q(-127, 127);
  std::uniform_real_distribution<float> u(-3.f, 3.f), scale(0.5f, 2.f);
  std::vector<float> x(rows * ld_src), dst(rows * ld_dst), ws1(hidden), ws2(in), b1(hidden), b2(in);
  std::vector<int8_t> w1(hidden * in), w2(in * hidden);
  for (auto &v : x) v = u(rng);
  for (auto &v : dst) v = u(rng);
  for (auto &v : w1) v = int8_t(q(rng));
  for (auto &v : w2) v = int8_t(q(rng));
  for (auto &v : ws1) v = scale(rng) * 2e-3f;
  for (auto &v : ws2) v = scale(rng) * 1e-3f;
  for (auto &v : b1) v = u(rng);
  for (auto &v : b2) v = u(rng);
  // Input scales that clip some rows, as a static calibration does.
  const ops::QuantizedLinearParams fc1{w1.data(), ws1.data(), 2.5f / 127, b1.data(), in, hidden};
  const ops::QuantizedLinearParams fc2{w2.data(), ws2.data(), 1.5f / 127, b2.data(), hidden, in};

  PackedWeightCache cache;
  const auto quantize = kernels::resolve<kernels::Op::quantize, DType::s8>().fn;
  const auto gelu = kernels::resolve<kernels::Op::gelu, DType::f32>().fn;
  std::vector<int8_t> x_s8(rows * in), h_s8(rows * hidden);
  std::vector<float> h(rows * hidden), want = dst;
  ops::QuantizedLinear first(fc1, ops::LinearShape{rows, in, hidden, false, false}, cache);
  ops::QuantizedLinear second(fc2, ops::LinearShape{rows, hidden, ld_dst, true, false}, cache);
  dnnl::stream stream(cpu_engine());
  quantize(x.data(), ld_src, x_s8.data(), in, rows, in, fc1.input_scale, 1);
  first.run(stream, x_s8.data(), h.data());
  gelu(h.data(), rows * hidden, 1);
  quantize(h.data(), hidden, h_s8.data(), hidden, rows, hidden, fc2.input_scale, 1);
  second.run(stream, h_s8.data(), want.data());

  for (int threads : {1, 2}) {
    INFO("threads=" << threads);
    std::vector<float> got = dst;
    ops::FusedMlp op(fc1, fc2, ops::FusedMlpShape{rows, ld_src, ld_dst, threads}, cache);
    op.run(x.data(), got.data());
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  }
}
