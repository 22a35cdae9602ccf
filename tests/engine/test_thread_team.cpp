// A model loaded with N worker threads must never run more than N, whatever
// the caller's OpenMP setting, and must leave the caller's setting as it was.
// oneDNN fixes a primitive's team size when the primitive is created, so this
// covers plan building as well as running. Own executable: libgomp starts its
// worker threads lazily, the first time a parallel region asks for them, so a
// process that never ran a wider team still has exactly one thread.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <omp.h>

#include <filesystem>
#include <vector>

#include "engine/model.h"

namespace {

int threads_in_process() {
  int n = 0;
  for (const auto &entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++n;
  }
  return n;
}

} // namespace

TEST_CASE("a one-thread model runs on the calling thread only and restores the caller's team size") {
  omp_set_num_threads(4); // the caller's own default, wider than the model's
  REQUIRE(threads_in_process() == 1);
  pola::ModelOptions options;
  options.threads = 1;
  auto model = pola::Model::load(POLA_TEST_MODEL, options);
  CHECK(omp_get_max_threads() == 4);
  std::vector<float> input(static_cast<size_t>(model->input_size()) * 2, 0.25f);
  std::vector<float> logits(static_cast<size_t>(model->config().num_classes) * 2);
  for (int batch : {1, 2}) model->run(input.data(), batch, logits.data()); // batch 2 builds a new plan
  CHECK(omp_get_max_threads() == 4);
  CHECK(threads_in_process() == 1);
}
