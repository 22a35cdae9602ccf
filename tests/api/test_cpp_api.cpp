// The header-only C++ API (polaformer.hpp): RAII, exceptions carrying the
// status and the message, the helpers (softmax, top_k), and that it gives
// the C API's results.
//
//   test_cpp_api FIXTURE_DIR   (made by make_api_fixture.py)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "polaformer/polaformer.hpp"

namespace {

int failures = 0;
#define CHECK(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
      ++failures;                                                                      \
    }                                                                                  \
  } while (0)

template <class E, class F> std::string thrown(F &&f) {
  try {
    f();
  } catch (const E &e) {
    return e.what();
  } catch (...) {
    return "<wrong exception type>";
  }
  return "<nothing thrown>";
}

std::vector<float> read_floats(const std::string &path, size_t count) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v(count);
  in.read(reinterpret_cast<char *>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!in) throw std::runtime_error("cannot read " + path);
  return v;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];

  CHECK(thrown<polaformer::InputError>([&] { polaformer::Model m(dir + "/missing.pola"); }).find("missing.pola") !=
        std::string::npos);
  try {
    polaformer::Model m(dir + "/photo.png");
  } catch (const polaformer::Error &e) {
    CHECK(e.status() == POLA_ERROR_INPUT);
  }

  pola_options opt = pola_default_options();
  opt.threads = 1;
  polaformer::Model model(dir + "/model.pola", opt);
  const auto shape = model.input_shape();
  CHECK(shape.channels == 3 && shape.height == 72 && shape.width == 72 && shape.floats() == 3 * 72 * 72);
  CHECK(model.num_classes() == 21);
  CHECK(model.precision() == "fp32"); // the default
  CHECK(model.threads() == 1);
  CHECK(model.class_names().size() == 21 && model.class_name(3) == "class_3");
  CHECK(thrown<polaformer::InputError>([&] { model.class_name(21); }).find("21") != std::string::npos);

  const auto input = read_floats(dir + "/input.f32", 3 * shape.floats());
  const auto logits = model.run(input);
  CHECK(logits.size() == 3 * 21u);
  std::vector<float> via_c(3 * 21);
  pola_run_options options = pola_run_options_default();
  options.batch = 3;
  pola_run_output output = pola_run_output_default();
  output.logits = via_c.data();
  const float *inputs[1] = {input.data()};
  CHECK(pola_run(model.get(), &options, inputs, &output) == POLA_OK);
  CHECK(logits == via_c);
  CHECK(thrown<polaformer::InputError>([&] { model.run(std::vector<float>(5)); }).find("multiple") !=
        std::string::npos);

  // The image path equals preprocess + run.
  const auto x = model.preprocess_image(dir + "/photo.png");
  const auto a = model.run(x), b = model.run_images({dir + "/photo.png"});
  CHECK(a == b);
  CHECK(thrown<polaformer::InputError>([&] { model.run_images({dir + "/nope.png"}); }).find("nope.png") !=
        std::string::npos);

  // softmax / top_k: probabilities sum to 1, best first, the arg-max first.
  const auto best = polaformer::top_k(a, 5);
  CHECK(best.size() == 5);
  double sum = 0;
  for (float p : polaformer::softmax(a.data(), 21)) sum += p;
  CHECK(std::fabs(sum - 1) < 1e-5);
  for (size_t i = 1; i < best.size(); ++i) CHECK(best[i - 1].second >= best[i].second);
  CHECK(best[0].first == int(std::max_element(a.begin(), a.end()) - a.begin()));
  CHECK(polaformer::top_k(a, 100).size() == 21);

  // Move-only ownership: the moved-from model is empty, the target works.
  polaformer::Model moved = std::move(model);
  CHECK(model.get() == nullptr && moved.get() != nullptr);
  CHECK(moved.run(x) == a);

  // The attention core: LargeFloats owns pola_alloc_floats arrays; a bad
  // argument throws InputError, and the C++ call gives the C call's bits.
  {
    const int heads = 2, d = 16, n = 200, width = heads * d;
    polaformer::LargeFloats q(n * width), kv(n * width), out(n * width), out_c(n * width);
    std::vector<float> inv_scale(width, 1.0f), power(width, 2.5f);
    for (int i = 0; i < n * width; ++i) {
      q[i] = std::sin(0.37f * i);
      kv[i] = std::cos(0.11f * i);
    }
    pola_attention_args args = pola_default_attention_args();
    args.n_q = args.n_k = n;
    args.heads = heads;
    args.head_dim = d;
    args.q = q.data();
    args.k = args.v = kv.data();
    args.inv_scale = inv_scale.data();
    args.power = power.data();
    args.out = out.data();
    args.threads = 1;
    polaformer::attention(args);
    args.out = out_c.data();
    CHECK(pola_attention(&args) == POLA_OK);
    CHECK(std::equal(out.data(), out.data() + n * width, out_c.data()));
    args.heads = 0;
    CHECK(thrown<polaformer::InputError>([&] { polaformer::attention(args); }).find("heads") != std::string::npos);
    CHECK(thrown<polaformer::InputError>([&] { polaformer::LargeFloats none(0); }).find("count") !=
          std::string::npos);
    polaformer::LargeFloats moved_q = std::move(q);
    CHECK(q.data() == nullptr && q.size() == 0 && moved_q.size() == size_t(n * width));
  }

  if (failures) std::fprintf(stderr, "%d check(s) failed\n", failures);
  else std::printf("C++ API: all checks passed (library %s)\n", polaformer::version().c_str());
  return failures ? 1 : 0;
}
