// `pola bench-attention`: times the polarity attention core (both passes) on
// random data and reports median time, GFLOP/s, peak RSS, ISA and threads.
//
// FLOPs counted per token and head, as the kernel executes them:
//   key pass   2*d*d (KV += phi_k^T v: one of pos/neg per channel is zero,
//              so each token updates d rows of d) + 2d (ksum)
//   query pass 2*d*d (q_sim @ M with M = [KV1 | swap_rows(KV2)]: one of
//              pos/neg per channel is zero, so d selected rows of d) + 4d (the
//              two denominators q_sim . kmean, q_opp . kmean) + d (normalisation)
// The exp/log feature maps are not counted.
//
// The core reads q, k, v once and writes out once, so on a machine whose
// cores get little memory bandwidth it is bound by that traffic, not by its
// FLOPs. --floor times exactly that traffic with plain streaming loops over
// the same buffers and threads (the floor any implementation of this API
// would have), and --passes times each pass alone (n_q = 1 for the key pass,
// n_k = 1 for the query pass), so a result says which pass is far from it.
#include "command.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "apps/git_revision.h"
#include "kernels/cache_sizes.h"
#include "kernels/cpu_info.h"
#include "kernels/registry.h"
#include "kernels/large_buffer.h"
#include "peak_rss.h"
#include "weights/error.h"

namespace {

using namespace pola::kernels;
using pola::DType;

struct BenchOptions {
  int64_t tokens = 0;
  int heads = 8, head_dim = 64, threads = 0, runs = 5, warmup = 1;
  std::string isa;
  bool json = false;
  bool small_pages = false;
  bool floor = false, passes = false;
  std::string precision = "fp32"; // fp32 | bf16 (the products on AMX tiles or AVX512-BF16)
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Median wall milliseconds of `runs` calls of f after `warmup` untimed ones.
template <class F> std::vector<double> time_runs(int warmup, int runs, F &&f) {
  for (int w = 0; w < warmup; ++w) f();
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

// The core's compulsory memory traffic and nothing else: read k and v (summed,
// so the loads cannot be dropped), read q and write it to out with
// non-temporal stores (on x86-64), as the core writes a large output. SSE2 is enough:
// one core's DRAM bandwidth is bound by its outstanding misses, not by the
// load width. Rows split over threads in static blocks, like the core's.
float memory_floor(const float *q, const float *k, const float *v, float *out, int64_t n, int64_t width,
                   int threads) {
  float total = 0.0f;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
  for (int64_t t = 0; t < n; ++t) {
    const float *kr = k + t * width, *vr = v + t * width, *qr = q + t * width;
    float *o = out + t * width;
#if defined(__x86_64__)
    __m128 acc0 = _mm_setzero_ps(), acc1 = _mm_setzero_ps();
    for (int64_t j = 0; j + 4 <= width; j += 4) {
      acc0 = _mm_add_ps(acc0, _mm_load_ps(kr + j));
      acc1 = _mm_add_ps(acc1, _mm_load_ps(vr + j));
      _mm_stream_ps(o + j, _mm_load_ps(qr + j));
    }
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, _mm_add_ps(acc0, acc1));
    total += lanes[0] + lanes[1] + lanes[2] + lanes[3];
#else
    // Elsewhere plain loads and stores (no portable non-temporal store): a
    // floor the compiler vectorises, a little above the x86 one.
    float row = 0.0f;
    for (int64_t j = 0; j < width; ++j) {
      row += kr[j] + vr[j];
      o[j] = qr[j];
    }
    total += row;
#endif
  }
#if defined(__x86_64__)
  _mm_sfence();
#endif
  return total;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

using CoreFn = KernelFn<Op::polarity_attention, DType::f32>;

// A polarity core and the ISA it runs on.
struct Core {
  CoreFn fn;
  Isa isa;
};

// The fp32 core of --isa, or the one the registry resolves for this shape.
Core pick_fp32_core(const std::string &name, const PolarityAttnArgs &shape) {
  if (name.empty()) {
    const auto r = resolve<Op::polarity_attention, DType::f32>(shape);
    return {r.fn, r.isa};
  }
  Isa isa;
  if (!isa_from_name(name.c_str(), isa) || native_bf16(isa))
    throw pola::InputError("--isa must be an fp32 level (scalar, avx2, avx512 on x86-64; scalar, neon64 on "
                           "aarch64), not '" + name + "'");
  const CoreFn fn = lookup<Op::polarity_attention, DType::f32>(isa);
  if (!fn) throw pola::InputError("--isa " + name + " is not supported by this CPU/OS");
  return {fn, isa};
}

// The core a --precision runs: the fp32 one, or the bf16 one the registry
// resolves for this shape (an error where that would be the fp32 core).
Core pick_core(const std::string &precision, const Core &fp32, const PolarityAttnArgs &shape) {
  if (precision == "fp32") return fp32;
  if (precision != "bf16") throw pola::InputError("--precision must be fp32 or bf16, not '" + precision + "'");
  const auto r = resolve<Op::polarity_attention, DType::bf16>(shape);
  if (r.dtype != DType::bf16)
    throw pola::InputError("--precision bf16: the bf16 attention core needs AMX-BF16 or AVX512-BF16 (CPU, OS "
                           "state, POLA_ISA not capping them) and heads of at most 128 channels; this machine's "
                           "bf16 instructions: " + std::string(bf16_instructions_name(active_isa())));
  return {r.fn, r.isa};
}

// The bf16 core's error against the fp32 core of `table` on the same inputs:
// ||b - f||_2 / ||f||_2 and max |b - f| / max |f| over every output.
struct CoreError {
  double rel_l2 = -1, rel_max = -1;
};
CoreError error_against_fp32(CoreFn fp32, PolarityAttnArgs a, const float *bf16_out, int64_t elems) {
  std::vector<float> ref(static_cast<size_t>(elems));
  a.out = ref.data();
  fp32(a);
  double diff2 = 0, ref2 = 0, diff_max = 0, ref_max = 0;
#pragma omp parallel for num_threads(a.threads) reduction(+ : diff2, ref2) reduction(max : diff_max, ref_max)
  for (int64_t i = 0; i < elems; ++i) {
    const double f = ref[size_t(i)], e = double(bf16_out[i]) - f;
    diff2 += e * e;
    ref2 += f * f;
    diff_max = std::max(diff_max, std::fabs(e));
    ref_max = std::max(ref_max, std::fabs(f));
  }
  return {std::sqrt(diff2 / ref2), diff_max / ref_max};
}

// Uninitialised float arrays for q, k, v and out, filled by the caller. By
// default from kernels/large_buffer.h (2 MB aligned, huge pages advised), as
// a long-sequence application should allocate them; --small-pages uses the
// ordinary heap (64-byte aligned, 4 KB pages) to show what that costs.
struct FloatsFree {
  bool large;
  void operator()(float *p) const {
    if (large) free_large_floats(p);
    else ::operator delete[](p, std::align_val_t(64));
  }
};
using Floats = std::unique_ptr<float[], FloatsFree>;
Floats floats(int64_t n, bool large) {
  if (large) return Floats(alloc_large_floats(size_t(n)), FloatsFree{true});
  return Floats(static_cast<float *>(::operator new[](size_t(n) * sizeof(float), std::align_val_t(64))),
                FloatsFree{false});
}

// A string as a JSON string body (quotes and backslashes escaped, controls dropped).
std::string json_safe(const std::string &in) {
  std::string out;
  for (char ch : in) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
  }
  return out;
}

void run_bench(const BenchOptions &o) {
  if (o.tokens < 1) throw pola::InputError("--tokens must be >= 1");
  if (o.heads < 1) throw pola::InputError("--heads must be >= 1");
  if (o.head_dim < 2) throw pola::InputError("--head-dim must be >= 2");
  if (o.runs < 1) throw pola::InputError("--runs must be >= 1");
  if (o.threads < 0) throw pola::InputError("--threads must be >= 0 (0 = all cores)");
  if (o.warmup < 0) throw pola::InputError("--warmup must be >= 0");
  PolarityAttnArgs shape;
  shape.heads = o.heads;
  shape.head_dim = o.head_dim;
  const Core fp32 = pick_fp32_core(o.isa, shape);
  const Core picked = pick_core(o.precision, fp32, shape);
  const CoreFn core = picked.fn;
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));

  const int64_t n = o.tokens, width = int64_t(o.heads) * o.head_dim, elems = n * width;
  const bool large = !o.small_pages;
  auto q = floats(elems, large), k = floats(elems, large), v = floats(elems, large), out = floats(elems, large);
  std::vector<float> inv_scale(static_cast<size_t>(width)), power(static_cast<size_t>(width));
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> sc(0.5f, 2.0f), pw(1.0f, 5.0f);
  for (float &x : inv_scale) x = sc(rng);
  for (float &x : power) x = pw(rng);
  // q, k, v uniform in [-1, 1) from a counter hash: billions of values in
  // seconds, identical for any thread count.
  const auto uniform = [](uint64_t i) {
    uint64_t z = i * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return float(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
  };
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < elems; ++i) {
    q[size_t(i)] = uniform(3 * uint64_t(i));
    k[size_t(i)] = uniform(3 * uint64_t(i) + 1);
    v[size_t(i)] = uniform(3 * uint64_t(i) + 2);
    out[size_t(i)] = 0.0f;
  }

  PolarityAttnArgs a;
  a.n_q = n; a.n_k = n; a.heads = o.heads; a.head_dim = o.head_dim;
  a.q = q.get(); a.ld_q = width;
  a.k = k.get(); a.ld_k = width;
  a.v = v.get(); a.ld_v = width;
  a.inv_scale = inv_scale.data(); a.feature = FeatureMap{FeatureKind::abs_pow, power.data()};
  a.out = out.get(); a.ld_out = width;
  a.threads = threads;

  for (int w = 0; w < o.warmup; ++w) core(a); // page-in, thread pool start
  const double cpu0 = cpu_seconds();
  const std::vector<double> ms = time_runs(0, o.runs, [&] { core(a); });
  // CPU time per run across all threads: on a shared machine, wall time / CPU
  // time shows how much of the cores the benchmark actually got.
  const double cpu_ms = (cpu_seconds() - cpu0) * 1e3 / o.runs;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = median_of(ms);
  double key_ms = -1, query_ms = -1, floor_ms = -1;
  if (o.passes) {
    PolarityAttnArgs key_only = a, query_only = a;
    key_only.n_q = 1;
    query_only.n_k = 1;
    key_ms = median_of(time_runs(o.warmup, o.runs, [&] { core(key_only); }));
    query_ms = median_of(time_runs(o.warmup, o.runs, [&] { core(query_only); }));
  }
  if (o.floor) {
    volatile float sink = 0.0f;
    floor_ms = median_of(time_runs(o.warmup, o.runs, [&] {
      sink = memory_floor(q.get(), k.get(), v.get(), out.get(), n, width, threads);
    }));
    (void)sink;
  }
  if (o.passes || o.floor) core(a); // out holds the whole core's answer again (checksum, bf16 error)
  const double d = o.head_dim;
  const double flops = double(n) * o.heads * ((2.0 * d * d + 2 * d) + (2.0 * d * d + 5 * d));
  const double gflops = flops / (median * 1e-3) / 1e9;
  const double io_mb = 4.0 * double(elems) * sizeof(float) / (1024.0 * 1024.0);
  const double io_gb = 4.0 * double(elems) * sizeof(float) / 1e9;
  const double rss = pola::app::peak_rss_bytes() / (1024.0 * 1024.0); // MiB, as io_mb
  const long long huge_bytes = resident_huge_page_bytes();
  const double huge_mb = huge_bytes < 0 ? -1.0 : double(huge_bytes) / (1024.0 * 1024.0);
  const auto &cpu = pola::kernels::cpu_info();
  std::string features;
  for (const auto &f : cpu.features) features += (features.empty() ? "" : " ") + f;
  double checksum = 0;
  for (int64_t i = 0; i < elems; i += 997) checksum += out[size_t(i)];
  // After the RSS reading: the fp32 answer is one more output array.
  const CoreError err = o.precision == "bf16" ? error_against_fp32(fp32.fn, a, out.get(), elems) : CoreError{};

  // Which instructions did the bf16 products: AMX-BF16 tiles or AVX512-BF16 dot products.
  const char *bf16_path = o.precision == "bf16" ? bf16_instructions_name(picked.isa) : "none";
  if (o.json) {
    std::printf("{\"tokens\": %lld, \"heads\": %d, \"head_dim\": %d, \"threads\": %d, \"isa\": \"%s\", "
                "\"runs\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, \"cpu_ms_per_run\": %.4f, \"gflops\": %.3f, "
                "\"flops_per_call\": %.6g, \"peak_rss_mb\": %.2f, \"qkvo_mb\": %.2f, \"huge_page_mb\": %.1f, "
                "\"small_pages\": %s, \"checksum\": %.9g, \"commit\": \"%s\", \"precision\": \"%s\", \"bf16_path\": \"%s\", \"rel_err_l2_vs_fp32\": %.3g, \"rel_err_max_vs_fp32\": %.3g, "
                "\"traffic_gb_per_s\": %.3f, \"key_pass_ms\": %.4f, \"query_pass_ms\": %.4f, \"floor_ms\": %.4f, "
                "\"cpu\": {\"model\": \"%s\", \"cores\": %d, \"isa\": \"%s\", \"l1d_bytes\": %lld}}\n",
                (long long)n, o.heads, o.head_dim, threads, isa_name(fp32.isa), o.runs, median, sorted.front(),
                sorted.back(), cpu_ms, gflops, flops, rss, io_mb, huge_mb, o.small_pages ? "true" : "false", checksum,
                pola::app::git_revision(), o.precision.c_str(), bf16_path, err.rel_l2, err.rel_max, io_gb / (median * 1e-3), key_ms, query_ms, floor_ms, json_safe(cpu.model).c_str(),
                cpu.logical_cores, features.c_str(), (long long)pola::kernels::l1d_bytes());
  } else {
    std::printf("bench-attention: tokens=%lld heads=%d head_dim=%d isa=%s precision=%s (bf16 products: %s) threads=%d runs=%d commit=%s\n",
                (long long)n, o.heads, o.head_dim, isa_name(fp32.isa), o.precision.c_str(), bf16_path, threads, o.runs,
                pola::app::git_revision());
    std::printf("  cpu %s, L1d %lld KB\n", pola::kernels::cpu_summary().c_str(),
                (long long)pola::kernels::l1d_bytes() / 1024);
    std::printf("  median %.3f ms (min %.3f, max %.3f; CPU %.1f ms per run over all threads)\n", median,
                sorted.front(), sorted.back(), cpu_ms);
    std::printf("  traffic %.2f GB/s (q, k, v read and out written once: %.2f GB per call)\n",
                io_gb / (median * 1e-3), io_gb);
    if (o.precision == "bf16")
      std::printf("  bf16 products vs the fp32 core: relative error %.3g (L2), %.3g (max |diff| / max |out|)\n",
                  err.rel_l2, err.rel_max);
    if (o.passes)
      std::printf("  key pass alone %.3f ms, query pass alone %.3f ms\n", key_ms, query_ms);
    if (o.floor)
      std::printf("  memory floor %.3f ms (the same traffic, streaming loops; %.2f GB/s): core = %.2fx floor\n",
                  floor_ms, io_gb / (floor_ms * 1e-3), median / floor_ms);
    std::printf("  %.2f GFLOP/s (%.4g FLOP per call: key 2*d*d+2d, query 2*d*d+5d per token-head)\n",
                gflops, flops);
    std::printf("  peak RSS %.1f MB (q, k, v, out: %.1f MB; ratio %.3f)\n", rss, io_mb, rss / io_mb);
    if (o.small_pages)
      std::printf("  pages: 4 KB (--small-pages)\n");
    else if (huge_mb < 0)
      std::printf("  pages: huge pages advised; how many the system gave is unknown\n");
    else
      std::printf("  pages: huge pages advised; %.0f MB of the process are in 2 MB pages\n", huge_mb);
  }
}

pola::app::RegisterCommand register_bench_attention([](CLI::App &root) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App *c = root.add_subcommand("bench-attention",
                                    "Time the polarity linear-attention core on random data");
  c->add_option("--tokens", opts->tokens, "Tokens (n_q = n_k)")->required();
  c->add_option("--heads", opts->heads, "Heads")->capture_default_str();
  c->add_option("--head-dim", opts->head_dim, "Head dimension")->capture_default_str();
  c->add_option("--threads", opts->threads, "Threads (0 = all cores)")->capture_default_str();
  c->add_option("--runs", opts->runs, "Timed runs (median reported)")->capture_default_str();
  c->add_option("--warmup", opts->warmup, "Untimed runs before timing")->capture_default_str();
  c->add_option("--isa", opts->isa, "scalar | avx2 | avx512 (default: the active table)");
  c->add_option("--precision", opts->precision,
                 "fp32 | bf16 (the two products in bf16, on AMX tiles or AVX512-BF16 dot products, fp32 "
                 "accumulation; reports the error "
                 "against the fp32 core)")
      ->capture_default_str();
  c->add_flag("--json", opts->json, "Print one JSON object");
  c->add_flag("--small-pages", opts->small_pages,
              "Allocate q, k, v, out on the ordinary heap (4 KB pages) instead of 2 MB-aligned huge pages");
  c->add_flag("--floor", opts->floor,
              "Also time the memory floor: the same q, k, v reads and out writes with plain streaming loops");
  c->add_flag("--passes", opts->passes, "Also time each pass alone (key: n_q = 1; query: n_k = 1)");
  c->callback([opts] { run_bench(*opts); });
});

} // namespace
