// One pola::Model shared by four threads (the way a service embeds it): every
// thread runs its own inputs at batch sizes 1 and 2, so plans are built,
// pooled and reused concurrently. Each result must equal, bit for bit, what a
// single thread computes for the same input and batch size. Built plain, under
// AddressSanitizer and under ThreadSanitizer (scripts/sanitize.sh), where
// OMP_NUM_THREADS=1 and one worker thread per run keep libgomp's unannotated
// barriers out of the report: the races looked for are in our code, between
// the callers' threads.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine/model.h"

namespace {

constexpr int kThreads = 4;
constexpr int kRounds = 3;

std::vector<float> input_for(int64_t floats, int seed) {
  std::vector<float> x(static_cast<size_t>(floats));
  uint32_t s = 2166136261u ^ static_cast<uint32_t>(seed);
  for (auto &v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 500.0f;
  }
  return x;
}

void check_model(const std::string &file) {
  pola::ModelOptions options;
  options.threads = 1;
  auto model = pola::Model::load(std::string(POLA_FUZZ_CORPUS) + "/model_file/" + file, options);
  const int64_t per_image = model->input_size();
  const int classes = model->config().num_classes;

  // Expected logits, one thread: input (thread t, batch b) for every pair.
  std::vector<std::vector<float>> inputs, expected;
  for (int t = 0; t < kThreads; ++t)
    for (int batch = 1; batch <= 2; ++batch) {
      inputs.push_back(input_for(per_image * batch, 10 * t + batch));
      expected.emplace_back(static_cast<size_t>(batch * classes));
      model->run(inputs.back().data(), batch, expected.back().data());
    }

  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int round = 0; round < kRounds; ++round)
          for (int batch = 1; batch <= 2; ++batch) {
            const size_t k = static_cast<size_t>(2 * t + batch - 1);
            std::vector<float> logits(static_cast<size_t>(batch * classes));
            model->run(inputs[k].data(), batch, logits.data());
            if (std::memcmp(logits.data(), expected[k].data(), logits.size() * sizeof(float)) != 0) ++mismatches;
          }
      } catch (...) {
        ++errors;
      }
    });
  for (auto &th : pool) th.join();
  CHECK(errors == 0);
  CHECK(mismatches == 0);
}

} // namespace

TEST_CASE("four threads share one Pola-PVT model") { check_model("tiny_pvt.pola"); }
TEST_CASE("four threads share one Pola-Swin model") { check_model("tiny_swin.pola"); }
