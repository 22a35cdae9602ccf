// The C++ face of any-size runs and backbone features (polaformer.hpp):
// engine-owned buffers, shapes before running, refused sizes as exceptions.
//   test_cpp_features_api FIXTURE_DIR
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "polaformer/polaformer.hpp"

namespace {

int failures = 0;

void check(bool ok, const std::string &what) {
  if (ok) return;
  std::fprintf(stderr, "CHECK failed: %s\n", what.c_str());
  ++failures;
}

std::vector<float> read_floats(const std::string &path, size_t count) {
  std::vector<float> v(count);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char *>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!f) throw std::runtime_error("cannot read " + path);
  return v;
}

bool close_to(const std::vector<float> &engine, const std::vector<float> &ref) {
  if (engine.size() != ref.size()) return false;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::fmax(diff, std::fabs(double(engine[i]) - ref[i]));
    scale = std::fmax(scale, std::fabs(double(ref[i])));
  }
  return diff <= 1e-4 * scale;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const std::string dir = std::string(argv[1]) + "/sized";
  const int h = 64, w = 96, batch = 2;
  polaformer::Model model(dir + "/model.pola");
  const std::vector<float> input = read_floats(dir + "/sized_input.f32", size_t(batch) * 3 * h * w);
  check(close_to(model.run(input, h, w), read_floats(dir + "/sized_logits.f32", batch * 21)), "logits at 64x96");

  const auto shapes = model.feature_shapes(h, w);
  check(shapes.size() == 4 && shapes[3].channels == 64 && shapes[3].height == 8 && shapes[3].width == 12,
        "stage 4 shape 64 x 8 x 12");
  const auto f = model.features(input, h, w, {3}, /*pooled=*/true);
  check(f.stages[0].empty() && f.stages[1].empty() && f.stages[2].empty(), "only stage 4 filled");
  check(close_to(f.stages[3], read_floats(dir + "/stage4.f32", batch * shapes[3].floats())), "stage 4");
  check(close_to(f.pooled, read_floats(dir + "/pooled.f32", size_t(batch) * model.pooled_size())), "pooled");

  bool refused = false;
  try {
    model.check_size(66, 96);
  } catch (const polaformer::InputError &e) {
    refused = std::string(e.what()).find("height 64 or 72") != std::string::npos;
  }
  check(refused, "66x96 refused naming 64 or 72");
  check(model.plan_cache_stats().misses >= 1, "plan cache stats readable");
  if (failures) std::fprintf(stderr, "%d check(s) failed\n", failures);
  else std::printf("c++ features api: all checks passed\n");
  return failures ? 1 : 0;
}
