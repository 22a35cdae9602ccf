// Times the engine's backbone features (every stage + the pooled embedding,
// no head) of one model at one input size, and prints one JSON line: the
// per-run times, the process's peak RSS, the planned activation arena and the
// analytic FLOPs. One process per size, so the peak RSS belongs to that size.
//
//   pola_features_bench --model M.pola --size 1024x1024 --threads 2 [--runs 5] [--warmup 1]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

#include "apps/peak_rss.h"
#include "model/flops.h"
#include "engine/model.h"
#include "weights/error.h"

int main(int argc, char **argv) {
  CLI::App app{"Times backbone features at one input size"};
  std::string model_path, size = "224x224";
  int threads = 2, runs = 5, warmup = 1;
  app.add_option("--model", model_path)->required();
  app.add_option("--size", size, "HEIGHTxWIDTH");
  app.add_option("--threads", threads);
  app.add_option("--runs", runs);
  app.add_option("--warmup", warmup);
  CLI11_PARSE(app, argc, argv);
  try {
    const size_t x = size.find('x');
    const int64_t h = std::stoll(size.substr(0, x)), w = std::stoll(size.substr(x + 1));
    pola::ModelOptions opt;
    opt.threads = threads;
    auto model = pola::Model::load(model_path, opt);
    const auto &cfg = model->config();
    const auto shapes = model->feature_shapes(h, w);
    std::vector<float> input(static_cast<size_t>(cfg.in_chans * h * w));
    std::mt19937 rng(0);
    std::normal_distribution<float> normal;
    for (float &v : input) v = normal(rng);
    std::vector<std::vector<float>> stages(shapes.size());
    std::vector<float *> out;
    for (size_t i = 0; i < shapes.size(); ++i) {
      stages[i].resize(static_cast<size_t>(shapes[i].channels * shapes[i].height * shapes[i].width));
      out.push_back(stages[i].data());
    }
    std::vector<float> pooled(static_cast<size_t>(model->pooled_size()));
    std::vector<double> times;
    for (int r = 0; r < warmup + runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      model->features(input.data(), 1, h, w, out.data(), pooled.data());
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r >= warmup) times.push_back(ms);
    }
    const double gflop = 2.0 * double(pola::macs_per_image(cfg, h, w) - cfg.stages.back().dim * cfg.num_classes) / 1e9;
    // MiB, as arena_mb; taken before the arena query below builds another plan.
    const double peak_rss = pola::app::peak_rss_bytes() / (1 << 20);
    const auto arena = model->arena_sizes(1, h, w);     // the plan of a logits run: the same backbone
    std::printf("{\"engine\": \"pola\", \"height\": %lld, \"width\": %lld, \"threads\": %d, \"gflop\": %.4f, "
                "\"arena_mb\": %.3f, \"peak_rss_mb\": %.1f, \"times_ms\": [",
                static_cast<long long>(h), static_cast<long long>(w), threads, gflop,
                double(arena.planned_bytes) / (1 << 20), peak_rss);
    for (size_t i = 0; i < times.size(); ++i) std::printf("%s%.3f", i ? ", " : "", times[i]);
    std::printf("]}\n");
  } catch (const std::exception &e) {
    std::cerr << "pola_features_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
