// pola_bench_window_attention [--threads N] [--isa avx512|avx2|scalar|all]
// Times the Swin window-attention kernel (softmax stages of Pola-Swin) on the
// shapes the models run: 7x7 windows (t = 49) and 12x12 (t = 144, Swin-B 384),
// d = 32, with and without the shifted-window mask. Prints microseconds per
// call (median of 7 samples) and GFLOP/s over the two products (4 t^2 d per
// window and head), for the fp32 kernel of each ISA and, where the CPU has
// AVX512-BF16, the bf16 kernel. A benchmark, not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_info.h"
#include "kernels/registry.h"

namespace {

using Clock = std::chrono::steady_clock;

template <class F> double median_seconds(F &&fn) {
  fn();
  int reps = 1;
  for (;;) {
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) fn();
    if (std::chrono::duration<double>(Clock::now() - t0).count() > 0.03 || reps > (1 << 20)) break;
    reps *= 2;
  }
  std::vector<double> s;
  for (int i = 0; i < 7; ++i) {
    const auto t0 = Clock::now();
    for (int j = 0; j < reps; ++j) fn();
    s.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / reps);
  }
  std::sort(s.begin(), s.end());
  return s[3];
}

struct Case { const char *name; int64_t windows; int t, heads, d; bool masked; };

} // namespace

int main(int argc, char **argv) {
  int threads = 2;
  std::string isa_arg = "all";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--isa" && i + 1 < argc) isa_arg = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--isa avx512|avx2|scalar|all]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1) {
    std::fprintf(stderr, "--threads must be >= 1\n");
    return 2;
  }
  std::vector<pola::kernels::Isa> isas;
  if (isa_arg == "all") {
    isas = {pola::kernels::Isa::avx512, pola::kernels::Isa::avx2, pola::kernels::Isa::scalar};
  } else {
    pola::kernels::Isa isa;
    if (!pola::kernels::isa_from_name(isa_arg.c_str(), isa) || isa > pola::kernels::Isa::avx512) {
      std::fprintf(stderr, "unknown --isa '%s'\n", isa_arg.c_str());
      return 2;
    }
    isas = {isa};
  }
  // Swin-T at 224: stage 3 has 4 windows x 12 heads, stage 4 one window x 24
  // heads; Swin-B at 384: stage 3 has 4 windows of 144 tokens x 16 heads.
  const Case cases[] = {{"stage3 7x7, 12 heads", 4, 49, 12, 32, false},
                        {"stage3 7x7, 12 heads, masked", 4, 49, 12, 32, true},
                        {"stage4 7x7, 24 heads", 1, 49, 24, 32, false},
                        {"stage3 12x12, 16 heads, masked", 4, 144, 16, 32, true}};
  std::printf("CPU: %s; %d thread(s)\n", pola::kernels::cpu_summary().c_str(), threads);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const Case &c : cases) {
    const int64_t width = int64_t(c.heads) * c.d, rows = c.windows * c.t;
    std::vector<float> qkv(size_t(rows * 3 * width)), bias(size_t(c.heads) * c.t * c.t),
        mask(c.masked ? size_t(c.windows) * c.t * c.t : 0), out(size_t(rows * width));
    for (float &x : qkv) x = normal(rng);
    for (float &x : bias) x = 0.1f * normal(rng);
    for (size_t i = 0; i < mask.size(); ++i) mask[i] = (i % 7 == 3) ? -100.0f : 0.0f;
    pola::kernels::WindowAttnArgs a;
    a.windows = c.windows; a.tokens = c.t; a.heads = c.heads; a.head_dim = c.d;
    a.scale = 0.17677669f;
    a.qkv = qkv.data(); a.ld_qkv = 3 * width;
    a.bias = bias.data();
    a.mask = c.masked ? mask.data() : nullptr; a.n_mask = c.masked ? c.windows : 0;
    a.out = out.data(); a.ld_out = width;
    a.threads = threads;
    const double flop = 4.0 * double(c.t) * c.t * c.d * double(c.windows) * c.heads;
    for (pola::kernels::Isa isa : isas) {
      namespace k = pola::kernels;
      const auto fp32 = k::lookup<k::Op::window_attention, pola::DType::f32>(isa);
      if (!fp32) {
        std::printf("%-32s %-7s not supported here\n", c.name, pola::kernels::isa_name(isa));
        continue;
      }
      const double s = median_seconds([&] { fp32(a); });
      std::printf("%-32s %-7s %9.1f us %7.1f GFLOP/s\n", c.name, pola::kernels::isa_name(isa), s * 1e6,
                  flop / s * 1e-9);
    }
    // The bf16 kernel (AVX512-BF16 dot products), whatever --isa says.
    namespace k = pola::kernels;
    if (const auto bf16 = k::lookup<k::Op::window_attention, pola::DType::bf16>(k::Isa::avx512_bf16)) {
      const double s = median_seconds([&] { bf16(a); });
      std::printf("%-32s %-7s %9.1f us %7.1f GFLOP/s\n", c.name, "bf16", s * 1e6, flop / s * 1e-9);
    }
  }
  return 0;
}
