// `pola bench`: end-to-end latency of a model on random input, with the
// figures a user compares engines by (median / p90, images/s, GFLOP/s and the
// share of the machine's measured fp32 GEMM peak, peak RSS, ISA, threads,
// commit), and with --profile the time per named node.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <dnnl.hpp>
#include <nlohmann/json.hpp>
#include <omp.h>

#include "command.h"
#include "engine/dnnl_context.h"
#include "engine/flops.h"
#include "engine/model.h"
#include "kernels/kernels.h"
#include "peak_rss.h"
#include "weights/error.h"

namespace {

using Clock = std::chrono::steady_clock;

// The machine's achievable fp32 rate: best of a few large oneDNN GEMMs on the
// same thread count (the ceiling every GEMM of the model runs against).
double measure_peak_gflops(int threads) {
  omp_set_num_threads(threads);
  const int64_t n = 1536;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  auto &eng = pola::cpu_engine();
  dnnl::memory::desc md({n, n}, dt::f32, tag::ab);
  dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), eng));
  dnnl::memory a(md, eng), b(md, eng), c(md, eng);
  std::fill_n(static_cast<float *>(a.get_data_handle()), n * n, 0.5f);
  std::fill_n(static_cast<float *>(b.get_data_handle()), n * n, 0.25f);
  dnnl::stream st(eng);
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    auto t0 = Clock::now();
    prim.execute(st, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    st.wait();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 2.0 * n * n * n / s / 1e9);
  }
  return best;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  double idx = p * (v.size() - 1);
  size_t lo = static_cast<size_t>(idx), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (idx - lo);
}

struct BenchArgs {
  std::string model;
  int batch = 1, threads = 0, runs = 20, warmup = 3;
  double peak = 0;
  bool json = false, profile = false;
};

void bench(const BenchArgs &a) {
  pola::ModelOptions opt;
  opt.threads = a.threads;
  auto model = pola::Model::load(a.model, opt);
  const auto &cfg = model->config();
  std::vector<float> input(model->input_size() * a.batch), logits(int64_t(a.batch) * cfg.num_classes);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto &x : input) x = u(rng);

  for (int i = 0; i < a.warmup; ++i) model->run(input.data(), a.batch, logits.data());
  std::vector<double> ms;
  // Per node, the time of every run; the profile reports medians so that a
  // run preempted by another process does not distort it.
  std::map<std::string, std::vector<double>> node_runs;
  std::vector<std::string> node_order;
  pola::NodeObserver observer = [&](const pola::Node &n, double s) {
    auto &runs = node_runs[n.name];
    if (runs.empty() && (node_order.empty() || std::find(node_order.begin(), node_order.end(), n.name) == node_order.end()))
      node_order.push_back(n.name);
    runs.push_back(s);
  };
  for (int i = 0; i < a.runs; ++i) {
    auto t0 = Clock::now();
    model->run(input.data(), a.batch, logits.data(), a.profile ? &observer : nullptr);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const double median = percentile(ms, 0.5), p90 = percentile(ms, 0.9);
  std::map<std::string, double> node_time; // median seconds per run
  for (auto &n : node_runs) node_time[n.first] = percentile(n.second, 0.5);
  const double gflop = 2.0 * pola::macs_per_image(cfg) * a.batch / 1e9;
  const double gflops = gflop / (median / 1e3);
  const double peak = a.peak > 0 ? a.peak : measure_peak_gflops(model->threads());
  const double rss = pola::app::peak_rss_mb();
  const char *isa = pola::kernels::isa_name(pola::kernels::active().isa);
  const auto arena = model->arena_sizes(a.batch);
  const double arena_mb = arena.planned_bytes / 1e6, tensors_mb = arena.tensor_bytes / 1e6;

  if (a.json) {
    nlohmann::json j{{"model", a.model}, {"arch", cfg.arch}, {"batch", a.batch}, {"threads", model->threads()},
                     {"runs", a.runs}, {"median_ms", median}, {"p90_ms", p90},
                     {"images_per_s", a.batch / (median / 1e3)}, {"gflop_per_run", gflop}, {"gflops", gflops},
                     {"peak_gflops", peak}, {"peak_share", gflops / peak}, {"peak_rss_mb", rss},
                     {"arena_planned_mb", arena_mb}, {"arena_tensors_mb", tensors_mb}, {"isa", isa},
                     {"commit", POLA_GIT_COMMIT}};
    if (a.profile) {
      nlohmann::json nodes = nlohmann::json::array();
      for (const auto &n : node_order) nodes.push_back({{"node", n}, {"ms", node_time[n] * 1e3}});
      j["profile"] = nodes;
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("model      %s (%s), batch %d\n", a.model.c_str(), cfg.arch.c_str(), a.batch);
  std::printf("isa        %s, threads %d, commit %s\n", isa, model->threads(), POLA_GIT_COMMIT);
  std::printf("latency    median %.2f ms, p90 %.2f ms over %d runs (%d warm-up)\n", median, p90, a.runs, a.warmup);
  std::printf("throughput %.1f images/s\n", a.batch / (median / 1e3));
  std::printf("compute    %.2f GFLOP per run, %.1f GFLOP/s = %.1f%% of the measured fp32 GEMM peak (%.0f GFLOP/s)\n",
              gflop, gflops, 100 * gflops / peak, peak);
  std::printf("memory     peak RSS %.1f MB; arena %.2f MB planned (sum of tensors %.2f MB)\n", rss, arena_mb,
              tensors_mb);
  if (a.profile) {
    // Per node (mean over runs), then per kind of node (the name's last part).
    double total = 0;
    std::map<std::string, double> by_kind;
    for (const auto &n : node_order) {
      total += node_time[n];
      auto dot = n.rfind('.');
      std::string kind = dot == std::string::npos ? n : n.substr(dot + 1);
      if (!kind.empty() && std::isdigit(static_cast<unsigned char>(kind[0]))) kind = "mlp.fc2 (block)";
      by_kind[kind] += node_time[n];
    }
    std::vector<std::pair<double, std::string>> kinds;
    for (auto &k : by_kind) kinds.push_back({k.second, k.first});
    std::sort(kinds.rbegin(), kinds.rend());
    std::printf("\nprofile by kind (sum of per-node medians, ms per run, share):\n");
    for (auto &k : kinds) std::printf("  %-28s %8.3f  %5.1f%%\n", k.second.c_str(), k.first * 1e3, 100 * k.first / total);
    std::vector<std::pair<double, std::string>> top;
    for (const auto &n : node_order) top.push_back({node_time[n], n});
    std::sort(top.rbegin(), top.rend());
    std::printf("\nslowest nodes (median ms per run):\n");
    for (size_t i = 0; i < std::min<size_t>(25, top.size()); ++i)
      std::printf("  %-44s %8.3f\n", top[i].second.c_str(), top[i].first * 1e3);
  }
}

pola::app::RegisterCommand reg([](CLI::App &root) {
  auto *cmd = root.add_subcommand("bench", "Time a model end to end on random input (latency, throughput, GFLOP/s, RSS)");
  auto a = std::make_shared<BenchArgs>();
  cmd->add_option("--model,-m", a->model, "Model file (.pola)")->required();
  cmd->add_option("--batch,-b", a->batch, "Images per run")->check(CLI::Range(1, 1024));
  cmd->add_option("--threads,-t", a->threads, "Worker threads (0 = all cores)")->check(CLI::Range(0, 1024));
  cmd->add_option("--runs,-r", a->runs, "Timed runs")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", a->warmup, "Untimed runs first")->check(CLI::Range(0, 1000));
  cmd->add_option("--peak-gflops", a->peak, "fp32 peak to report the share of (default: measured now with a large oneDNN GEMM)");
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->add_flag("--profile", a->profile, "Time every named node");
  cmd->callback([a] { bench(*a); });
});

} // namespace
