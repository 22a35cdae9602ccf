// `pola bench`: end-to-end latency of a model on random input, with the
// figures a user compares engines by (median / p90, images/s, GFLOP/s and the
// share of the machine's measured fp32 GEMM peak, peak RSS, ISA, threads,
// commit), and with --profile the time per named node.

#include <filesystem>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <dnnl.hpp>
#include <nlohmann/json.hpp>
#include <omp.h>

#include "apps/git_revision.h"
#include "cli_checks.h"
#include "command.h"
#include "precision_option.h"
#include "engine/dnnl_context.h"
#include "model/flops.h"
#include "engine/model.h"
#include "engine/omp_team.h"
#include "engine/ops/gemm_provider.h"
#include "kernels/cpu_info.h"
#include "kernels/registry.h"
#include "peak_rss.h"
#include "plural.h"
#include "weights/error.h"

namespace {

using Clock = std::chrono::steady_clock;

// The machine's achievable GEMM rate in `type` (f32, or bf16 with fp32
// accumulation) on `threads` threads: the ceiling every GEMM of the model
// runs against. A single cold GEMM under-reads it (AVX-512 and AMX units
// ramp their clock and power up, oneDNN's first call pays for its JIT and
// page faults), so the units are first kept busy for a while, then each of
// several shapes (the models' stage shapes and one large square) is timed
// several times and the best rate of all is kept.
double measure_peak_gflops(int threads, dnnl::memory::data_type type) {
  pola::ScopedOmpThreads team(threads);
  using tag = dnnl::memory::format_tag;
  auto &eng = pola::cpu_engine();
  dnnl::stream st(eng);
  struct Shape { int64_t m, k, n; };
  const Shape shapes[] = {{3136, 96, 384}, {3136, 384, 96}, {784, 192, 768}, {784, 768, 192},
                          {196, 384, 1536}, {1568, 384, 1536}, {1536, 1536, 1536}};
  auto rate_of = [&](const Shape &sh, double seconds_budget, int min_runs) {
    dnnl::memory::desc a_md({sh.m, sh.k}, type, tag::ab), c_md({sh.m, sh.n}, dnnl::memory::data_type::f32, tag::ab);
    dnnl::memory::desc b_any({sh.k, sh.n}, type, tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_any, c_md), eng);
    dnnl::matmul prim(pd);
    dnnl::memory a(a_md, eng), b(pd.weights_desc(), eng), c(c_md, eng);
    // Any finite contents do: zero bytes are 0.0 in both types.
    std::memset(a.get_data_handle(), 0, a_md.get_size());
    std::memset(b.get_data_handle(), 0, pd.weights_desc().get_size());
    double best = 0, spent = 0;
    for (int i = 0; i < min_runs || spent < seconds_budget; ++i) {
      auto t0 = Clock::now();
      prim.execute(st, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
      st.wait();
      const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
      spent += sec;
      best = std::max(best, 2.0 * sh.m * sh.k * sh.n / sec / 1e9);
      if (i > 1000) break;
    }
    return best;
  };
  rate_of(shapes[6], 0.5, 3); // warm-up: frequency settled, JIT and pages done
  double best = 0;
  for (int round = 0; round < 2; ++round)
    for (const Shape &sh : shapes) best = std::max(best, rate_of(sh, 0.08, 5));
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
  pola::PrecisionRequest precision = pola::PrecisionRequest::fp32;
  double peak = 0;
  bool json = false, profile = false, low_memory = false;
};

// One model at one precision, timed: run times, and per node the median of its runs.
struct Timing {
  std::vector<double> ms;
  std::vector<std::string> node_order;
  std::map<std::string, double> node_seconds; // median per run
  std::map<std::string, pola::Precision> node_precision;
  std::map<std::string, std::string> node_outputs; // "f32 bf16": the dtypes the node writes
};

Timing time_model(pola::Model &model, const BenchArgs &a) {
  std::vector<float> input(model.input_size() * a.batch), logits(int64_t(a.batch) * model.config().num_classes);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto &x : input) x = u(rng);
  for (int i = 0; i < a.warmup; ++i) model.run(input.data(), a.batch, logits.data());
  Timing t;
  // Per node, the time of every run; the profile reports medians so that a
  // run preempted by another process does not distort it.
  std::map<std::string, std::vector<double>> node_runs;
  pola::NodeObserver observer = [&](const pola::Node &n, double s) {
    auto &runs = node_runs[n.name];
    if (runs.empty()) {
      t.node_order.push_back(n.name);
      t.node_precision[n.name] = n.precision;
      std::string dtypes;
      for (const pola::TensorView &v : n.outputs) dtypes += (dtypes.empty() ? "" : " ") + std::string(pola::dtype_name(v.dtype()));
      t.node_outputs[n.name] = dtypes;
    }
    runs.push_back(s);
  };
  for (int i = 0; i < a.runs; ++i) {
    auto t0 = Clock::now();
    model.run(input.data(), a.batch, logits.data(), a.profile ? &observer : nullptr);
    t.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  for (auto &n : node_runs) t.node_seconds[n.first] = percentile(n.second, 0.5);
  return t;
}

// A node's kind: the last part of its name. A block's output node is the end
// of its MLP in every family (the fused MLP, or fc2 adding into the stream).
std::string kind_of(const std::string &node) {
  auto dot = node.rfind('.');
  std::string kind = dot == std::string::npos ? node : node.substr(dot + 1);
  if (!kind.empty() && std::isdigit(static_cast<unsigned char>(kind[0]))) kind = "mlp (block output)";
  return kind;
}

std::map<std::string, double> seconds_by_kind(const Timing &t) {
  std::map<std::string, double> by_kind;
  for (const auto &n : t.node_order) by_kind[kind_of(n)] += t.node_seconds.at(n);
  return by_kind;
}

// The profile by kind: one column per timing (fp32 and, when the run is bf16, bf16 beside it).
void print_profile(const std::vector<std::pair<std::string, const Timing *>> &columns) {
  std::vector<std::map<std::string, double>> kinds;
  std::vector<double> totals;
  for (auto &c : columns) {
    kinds.push_back(seconds_by_kind(*c.second));
    double total = 0;
    for (auto &k : kinds.back()) total += k.second;
    totals.push_back(total);
  }
  std::vector<std::pair<double, std::string>> order; // by the last column's time
  std::map<std::string, bool> seen;
  for (auto &m : kinds)
    for (auto &k : m) seen[k.first] = true;
  for (auto &k : seen) order.push_back({kinds.back().count(k.first) ? kinds.back().at(k.first) : 0, k.first});
  std::sort(order.rbegin(), order.rend());
  std::printf("\nprofile by kind (sum of per-node medians, ms per run, share):\n  %-28s", "");
  for (auto &c : columns) std::printf("  %16s", c.first.c_str());
  std::printf("\n");
  for (auto &o : order) {
    std::printf("  %-28s", o.second.c_str());
    for (size_t i = 0; i < columns.size(); ++i) {
      const auto it = kinds[i].find(o.second);
      if (it == kinds[i].end()) std::printf("  %16s", "-");
      else std::printf("  %8.3f %5.1f%%", it->second * 1e3, 100 * it->second / totals[i]);
    }
    std::printf("\n");
  }
  std::printf("  %-28s", "total");
  for (double t : totals) std::printf("  %8.3f %6s", t * 1e3, "");
  std::printf("\n");
}

void bench(const BenchArgs &a) {
  pola::ModelOptions opt;
  opt.threads = a.threads;
  opt.precision = a.precision;
  opt.low_memory = a.low_memory;
  auto model = pola::Model::load(a.model, opt);
  const auto &cfg = model->config();
  const pola::Precision precision = model->precision().precision;
  const Timing t = time_model(*model, a);
  const double median = percentile(t.ms, 0.5), p90 = percentile(t.ms, 0.9);
  const double gflop = 2.0 * pola::macs_per_image(cfg) * a.batch / 1e9;
  const double gflops = gflop / (median / 1e3);
  const double rss = pola::app::peak_rss_bytes() / 1e6; // MB, as the file, arena and packed sizes
  const double peak = a.peak > 0 ? a.peak : measure_peak_gflops(model->threads(), dnnl::memory::data_type::f32);
  // The bf16 ceiling too, unless the caller gave the peak (then no GEMM is re-measured, e.g. under load).
  const double bf16_peak = precision == pola::Precision::bf16 && a.peak <= 0
                               ? measure_peak_gflops(model->threads(), dnnl::memory::data_type::bf16)
                               : 0;
  // The ISA of the fp32 kernels (what the "isa" field has always named) and the bf16 instructions.
  const char *isa = pola::kernels::isa_name(pola::kernels::resolve<pola::kernels::Op::layernorm, pola::DType::f32>().isa);
  const char *bf16_isa = pola::kernels::bf16_instructions_name(pola::kernels::active_isa());
  const auto arena = model->arena_sizes(a.batch);
  const double arena_mb = arena.planned_bytes / 1e6, tensors_mb = arena.tensor_bytes / 1e6;
  const double packed_mb = model->packed_weight_bytes() / 1e6;
  const double file_mb = static_cast<double>(std::filesystem::file_size(a.model)) / 1e6;
  // With a bf16 profile, the same model at fp32 beside it (loaded after the
  // figures above, so the peak RSS is the bf16 run's own).
  std::unique_ptr<pola::Model> fp32_model;
  Timing fp32_timing;
  if (a.profile && precision == pola::Precision::bf16) {
    pola::ModelOptions o = opt;
    o.precision = pola::PrecisionRequest::fp32;
    fp32_model = pola::Model::load(a.model, o);
    fp32_timing = time_model(*fp32_model, a);
  }

  if (a.json) {
    nlohmann::json j{{"model", a.model}, {"arch", cfg.arch}, {"batch", a.batch}, {"threads", model->threads()},
                     {"runs", a.runs}, {"median_ms", median}, {"p90_ms", p90},
                     {"images_per_s", a.batch / (median / 1e3)}, {"gflop_per_run", gflop}, {"gflops", gflops},
                     {"peak_gflops", peak}, {"peak_share", gflops / peak}, {"peak_rss_mb", rss},
                     {"arena_planned_mb", arena_mb}, {"arena_tensors_mb", tensors_mb}, {"isa", isa},
                     {"packed_weights_mb", packed_mb}, {"file_mb", file_mb}, {"low_memory", a.low_memory}, {"gemm_f32", pola::ops::gemm_provider_name(pola::ops::fp32_gemm_provider(a.low_memory))}, {"precision", pola::precision_name(precision)},
                     {"precision_reason", model->precision().reason}, {"bf16_isa", bf16_isa},
                     {"cpu", pola::kernels::cpu_summary()}, {"commit", pola::app::git_revision()}};
    if (bf16_peak > 0) j["bf16_peak_gflops"] = bf16_peak;
    if (precision == pola::Precision::bf16) {
      // Which products the attention core ran in, and the measured reason (the same process's rate).
      j["attention_precision"] = pola::precision_name(pola::op_precisions(precision).attention);
      j["attention_precision_reason"] = pola::bf16_speed().reason;
    }
    if (a.profile) {
      auto nodes_of = [](const Timing &tm) {
        nlohmann::json nodes = nlohmann::json::array();
        for (const auto &n : tm.node_order)
          nodes.push_back({{"node", n}, {"ms", tm.node_seconds.at(n) * 1e3},
                           {"precision", pola::precision_name(tm.node_precision.at(n))},
                           {"outputs", tm.node_outputs.at(n)}});
        return nodes;
      };
      j["profile"] = nodes_of(t);
      if (fp32_model) j["profile_fp32"] = nodes_of(fp32_timing);
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("model      %s (%s), batch %d\n", a.model.c_str(), cfg.arch.c_str(), a.batch);
  std::printf("cpu        %s\n", pola::kernels::cpu_summary().c_str());
  std::printf("isa        %s, threads %d, commit %s\n", isa, model->threads(), pola::app::git_revision());
  std::printf("precision  %s (%s); bf16 instructions: %s\n", pola::precision_name(precision),
              model->precision().reason.c_str(), bf16_isa);
  std::printf("latency    median %.2f ms, p90 %.2f ms over %s (%d warm-up)\n", median, p90,
              pola::app::count_of(a.runs, "run").c_str(), a.warmup);
  std::printf("throughput %.1f images/s\n", a.batch / (median / 1e3));
  std::printf("compute    %.2f GFLOP per run, %.1f GFLOP/s = %.1f%% of the measured fp32 GEMM peak (%.0f GFLOP/s)\n",
              gflop, gflops, 100 * gflops / peak, peak);
  if (bf16_peak > 0)
    std::printf("           = %.1f%% of the measured bf16 GEMM peak (%.0f GFLOP/s)\n", 100 * gflops / bf16_peak,
                bf16_peak);
  std::printf("memory     peak RSS %.1f MB = %.2fx (file %.1f MB + arena); packed weights %.1f MB%s; arena %.2f MB "
              "planned (sum of tensors %.2f MB)\n",
              rss, rss / (file_mb + arena_mb), file_mb, packed_mb, a.low_memory ? " (low-memory mode)" : "", arena_mb,
              tensors_mb);
  if (a.profile) {
    if (fp32_model) print_profile({{"fp32", &fp32_timing}, {"bf16", &t}});
    else print_profile({{pola::precision_name(precision), &t}});
    std::vector<std::pair<double, std::string>> top;
    for (const auto &n : t.node_order) top.push_back({t.node_seconds.at(n), n});
    std::sort(top.rbegin(), top.rend());
    std::printf("\nslowest nodes (median ms per run, %s):\n", pola::precision_name(precision));
    for (size_t i = 0; i < std::min<size_t>(25, top.size()); ++i)
      std::printf("  %-44s %8.3f  %s, writes %s\n", top[i].second.c_str(), top[i].first * 1e3,
                  pola::precision_name(t.node_precision.at(top[i].second)), t.node_outputs.at(top[i].second).c_str());
  }
}

pola::app::RegisterCommand register_bench([](CLI::App &root) {
  auto *cmd = root.add_subcommand("bench", "Time a model end to end on random input (latency, throughput, GFLOP/s, RSS)");
  auto a = std::make_shared<BenchArgs>();
  cmd->add_option("--model,-m", a->model, "Model file (.pola)")->required();
  cmd->add_option("--batch,-b", a->batch, "Images per run")->check(pola::app::whole_number_in(1, 1024));
  cmd->add_option("--threads,-t", a->threads, "Worker threads (0 = all cores)")
      ->check(pola::app::whole_number_in(0, 1024));
  pola::app::add_precision_option(*cmd, a->precision);
  cmd->add_option("--runs,-r", a->runs, "Timed runs")->check(pola::app::whole_number_in(1, 100000));
  cmd->add_option("--warmup", a->warmup, "Untimed runs first")->check(pola::app::whole_number_in(0, 1000));
  cmd->add_option("--peak-gflops", a->peak,
                  "fp32 peak to report the share of (default: measured now, best of oneDNN GEMMs of the models' "
                  "shapes after a warm-up)");
  pola::app::add_low_memory_flag(*cmd, a->low_memory);
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->add_flag("--profile", a->profile, "Time every named node (a bf16 run is profiled beside the same model at fp32)");
  cmd->callback([a] { bench(*a); });
});

} // namespace
