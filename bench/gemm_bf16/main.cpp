// pola_bench_gemm_bf16 [--threads 1,2] [--shapes MxKxN,...] [--epilogue bias|fc1|fc1_split|fc2] [--bandwidth]
// Times oneDNN's bf16 matmul (weights in the layout it prefers, bias), its
// fp32 matmul on the same shape (what bf16 must beat) and the AMX GEMM of
// kernels/gemm_bf16.h on the same bf16 inputs; prints GFLOP/s, the ratios
// and the largest difference between the two bf16 GEMMs.
// --epilogue: bias (fp32 dst), fc1 (bias, exact GELU, bf16 dst: the fused
// MLP's first GEMM as oneDNN's post-ops), fc1_split (fp32 dst with bias,
// then the engine's gelu_bf16 over it: the fused MLP's fc1) or fc2 (bias, added to an fp32 dst: its second).
// --bandwidth: read bandwidth of buffers in L2, in L3-sized (56 MB: swin_t's
// bf16 weights) and DRAM-sized (1 GB) buffers.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <random>
#include <string>
#include <vector>

#include "kernels/registry.h"
#include "kernels/kernels.h"
#include "kernels/simd/to_bf16_rne.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Shape { int64_t m, k, n; };

// Median seconds per call of fn over 7 samples of enough calls for ~30 ms each.
template <class F> double time_call(F &&fn) {
  fn();
  int reps = 1;
  for (;;) {
    auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) fn();
    if (std::chrono::duration<double>(Clock::now() - t0).count() > 0.03 || reps > (1 << 20)) break;
    reps *= 2;
  }
  std::vector<double> s;
  for (int i = 0; i < 7; ++i) {
    auto t0 = Clock::now();
    for (int j = 0; j < reps; ++j) fn();
    s.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / reps);
  }
  std::sort(s.begin(), s.end());
  return s[3];
}

// The post-ops of the engine's linear layers (engine/ops/linear.cpp).
enum class Epilogue { bias, fc1, fc1_split, fc2 };

dnnl::primitive_attr epilogue_attr(Epilogue e) {
  dnnl::post_ops po;
  if (e == Epilogue::fc1) po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
  if (e == Epilogue::fc2) po.append_sum(1.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  return attr;
}

// Median seconds per call of oneDNN's matmul on (m x k x n) with `compute`
// sources and weights, bias and the epilogue; dst_out receives the fp32 result
// (left untouched when the epilogue writes bf16).
double time_onednn(const Shape &s, dnnl::memory::data_type compute, Epilogue e, const void *a, const float *w,
                   const float *bias, std::vector<float> &dst_out) {
  using dt = dnnl::memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream st(eng);
  const dt dst_dt = e == Epilogue::fc1 && compute == dt::bf16 ? dt::bf16 : dt::f32;
  dnnl::memory::desc a_md({s.m, s.k}, compute, {s.k, 1}), w_user({s.k, s.n}, dt::f32, {1, s.k}),
      w_any({s.k, s.n}, compute, dnnl::memory::format_tag::any), b_md({1, s.n}, dt::f32, {s.n, 1}),
      d_md({s.m, s.n}, dst_dt, {s.n, 1});
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_any, b_md, d_md), epilogue_attr(e), eng);
  static bool named = false;
  if (!named) std::printf("oneDNN implementation (first shape, %s): %s\n", compute == dt::bf16 ? "bf16" : "fp32",
                          pd.impl_info_str());
  if (compute == dt::f32) named = true;
  dnnl::matmul mm(pd);
  std::vector<float> w_copy(w, w + s.k * s.n);
  dnnl::memory wu(w_user, eng, w_copy.data()), wp(pd.weights_desc(), eng);
  dnnl::reorder(wu, wp).execute(st, wu, wp);
  std::vector<float> dst(size_t(s.m * s.n));
  const bool split = e == Epilogue::fc1_split;
  std::vector<uint16_t> hidden(split ? dst.size() : 0);
  namespace k = pola::kernels;
  const auto gelu = k::resolve<k::Op::gelu, pola::DType::f32>().fn;
  const auto gelu_bf16 = k::resolve<k::Op::gelu, pola::DType::bf16>().fn;
  dnnl::memory am(a_md, eng, const_cast<void *>(a)), bm(b_md, eng, const_cast<float *>(bias)),
      dm(d_md, eng, dst.data());
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wp}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, dm}};
  // fc2 adds to dst on every call: start from zeros so the result is one call's.
  mm.execute(st, args);
  st.wait();
  if (e == Epilogue::bias) dst_out = dst;
  return time_call([&] {
    mm.execute(st, args);
    st.wait();
    // fp32: the engine's in-place GELU, as its fp32 fused MLP does.
    if (split && compute == dt::bf16) gelu_bf16(dst.data(), s.n, hidden.data(), s.n, s.m, s.n, omp_get_max_threads());
    if (split && compute == dt::f32) gelu(dst.data(), s.m * s.n, omp_get_max_threads());
  });
}

void bench_shape(const Shape &s, int threads, Epilogue epilogue) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> w(size_t(s.n * s.k)), bias(size_t(s.n));
  std::vector<uint16_t> a(size_t(s.m * s.k));
  for (float &x : w) x = u(rng);
  for (float &x : bias) x = u(rng);
  for (uint16_t &x : a) x = pola::kernels::bf16_rne(u(rng));
  std::vector<float> a_f32(a.size());
  for (size_t i = 0; i < a.size(); ++i) a_f32[i] = pola::kernels::bf16_to_float(a[i]);
  std::vector<float> dst_dnnl(size_t(s.m * s.n)), dst_own(size_t(s.m * s.n)), dst_f32;

  omp_set_num_threads(threads);
  using dt = dnnl::memory::data_type;
  const double t_dnnl = time_onednn(s, dt::bf16, epilogue, a.data(), w.data(), bias.data(), dst_dnnl);
  const double t_f32 = time_onednn(s, dt::f32, epilogue, a_f32.data(), w.data(), bias.data(), dst_f32);

  const auto own = pola::kernels::resolve<pola::kernels::Op::gemm, pola::DType::bf16>(pola::kernels::Bf16GemmArgs{}).fn;
  double t_own = 0, diff = 0;
  if (own) {
    pola::kernels::Bf16GemmLayout layout(s.k, s.n);
    std::vector<uint16_t> packed(size_t(layout.packed_elems()));
    pola::kernels::pack_gemm_bf16_weights(w.data(), false, layout, packed.data());
    pola::kernels::Bf16GemmArgs g;
    g.rows = s.m;
    g.layout = layout;
    g.a = a.data();
    g.ld_a = s.k;
    g.b = packed.data();
    g.bias = bias.data();
    g.accumulate = epilogue == Epilogue::fc2;
    g.dst = dst_own.data();
    g.ld_dst = s.n;
    g.threads = threads;
    // GELU is not an epilogue of the own GEMM: fc1 is the GEMM then the engine's gelu_bf16.
    const bool fc1 = epilogue == Epilogue::fc1 || epilogue == Epilogue::fc1_split;
    const auto gelu_bf16 = pola::kernels::resolve<pola::kernels::Op::gelu, pola::DType::bf16>().fn;
    std::vector<uint16_t> hidden(fc1 ? dst_own.size() : 0);
    t_own = time_call([&] {
      own(g);
      if (fc1) gelu_bf16(dst_own.data(), s.n, hidden.data(), s.n, s.m, s.n, threads);
    });
    if (epilogue == Epilogue::bias)
      for (size_t i = 0; i < dst_own.size(); ++i) diff = std::max(diff, double(std::fabs(dst_own[i] - dst_dnnl[i])));
  }
  const double gflop = 2.0 * s.m * s.k * s.n * 1e-9;
  std::printf("%6ld x %5ld x %5ld  t=%d  onednn fp32 %8.1f us %6.0f GF/s | bf16 %8.1f us %6.0f GF/s (%.2fx fp32)"
              " | own %8.1f us %6.0f GF/s | own/onednn %.2f  max|diff| %.1e\n",
              long(s.m), long(s.k), long(s.n), threads, t_f32 * 1e6, gflop / t_f32, t_dnnl * 1e6, gflop / t_dnnl,
              t_dnnl / t_f32, t_own * 1e6, own ? gflop / t_own : 0.0, own ? t_own / t_dnnl : 0.0, diff);
}

// XOR of a range of 64-byte lines, four independent AVX-512 chains (the loads,
// not the arithmetic, bound it; AVX2 keeps the same loop on older CPUs).
__attribute__((target("avx512f"))) uint64_t xor_lines_avx512(const uint64_t *p, size_t lines) {
  __m512i x0 = _mm512_setzero_si512(), x1 = x0, x2 = x0, x3 = x0;
  size_t i = 0;
  for (; i + 4 <= lines; i += 4) {
    x0 = _mm512_xor_si512(x0, _mm512_load_si512(p + 8 * i));
    x1 = _mm512_xor_si512(x1, _mm512_load_si512(p + 8 * i + 8));
    x2 = _mm512_xor_si512(x2, _mm512_load_si512(p + 8 * i + 16));
    x3 = _mm512_xor_si512(x3, _mm512_load_si512(p + 8 * i + 24));
  }
  const __m512i x = _mm512_xor_si512(_mm512_xor_si512(x0, x1), _mm512_xor_si512(x2, x3));
  return uint64_t(_mm512_reduce_or_epi64(x));
}

void bench_bandwidth(int threads) {
  for (size_t mb : {1, 56, 1024}) {
    const size_t lines = mb * (size_t(1) << 20) / 64;
    auto *buf = static_cast<uint64_t *>(std::aligned_alloc(64, lines * 64));
    for (size_t i = 0; i < lines * 8; ++i) buf[i] = i;
    uint64_t sink = 0;
    const double t = time_call([&] {
#pragma omp parallel num_threads(threads) reduction(^ : sink)
      {
        const size_t t0 = lines * size_t(omp_get_thread_num()) / size_t(omp_get_num_threads());
        const size_t t1 = lines * size_t(omp_get_thread_num() + 1) / size_t(omp_get_num_threads());
        sink ^= xor_lines_avx512(buf + 8 * t0, t1 - t0);
      }
    });
    std::printf("read bandwidth t=%d  %5zu MB buffer: %6.1f GB/s (sink %d)\n", threads, mb, mb * 1048576.0 / t * 1e-9,
                int(sink & 1));
    std::free(buf);
  }
}

std::vector<int> parse_ints(const char *s) {
  std::vector<int> v;
  for (const char *p = s; *p;) {
    v.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p) ++p;
  }
  return v;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> threads{1, 2};
  // The Linear shapes (rows x in x out) of pola_swin_t and pola_pvt_tiny at batch 1 (ONEDNN_VERBOSE).
  std::vector<Shape> shapes;
  bool bandwidth = false;
  Epilogue epilogue = Epilogue::bias;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = parse_ints(argv[++i]);
    else if (!std::strcmp(argv[i], "--bandwidth")) bandwidth = true;
    else if (!std::strcmp(argv[i], "--epilogue") && i + 1 < argc) {
      const char *e = argv[++i];
      if (!std::strcmp(e, "bias")) epilogue = Epilogue::bias;
      else if (!std::strcmp(e, "fc1")) epilogue = Epilogue::fc1;
      else if (!std::strcmp(e, "fc1_split")) epilogue = Epilogue::fc1_split;
      else if (!std::strcmp(e, "fc2")) epilogue = Epilogue::fc2;
      else {
        std::fprintf(stderr, "pola_bench_gemm_bf16: unknown --epilogue '%s' (bias, fc1, fc1_split or fc2)\n", e);
        return 2;
      }
    }
    else if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc) {
      for (const char *p = argv[++i]; *p;) {
        Shape s{};
        if (std::sscanf(p, "%ldx%ldx%ld", &s.m, &s.k, &s.n) != 3) {
          std::fprintf(stderr, "pola_bench_gemm_bf16: bad shape list '%s' (want MxKxN,...)\n", argv[i]);
          return 2;
        }
        shapes.push_back(s);
        while (*p && *p != ',') ++p;
        if (*p) ++p;
      }
    } else {
      std::fprintf(stderr, "usage: pola_bench_gemm_bf16 [--threads 1,2] [--shapes MxKxN,...] "
                           "[--epilogue bias|fc1|fc1_split|fc2] [--bandwidth]\n");
      return 2;
    }
  }
  if (!pola::kernels::resolve<pola::kernels::Op::gemm, pola::DType::bf16>(pola::kernels::Bf16GemmArgs{}))
    std::printf("AMX-BF16 GEMM not available here: oneDNN only\n");
  if (bandwidth)
    for (int t : threads) bench_bandwidth(t);
  for (const Shape &s : shapes)
    for (int t : threads) bench_shape(s, t, epilogue);
  return 0;
}
