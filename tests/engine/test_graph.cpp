// The graph's checks of its own edges and the arena plan from tensor lifetimes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/arena.h"
#include "engine/graph.h"

using namespace pola;

namespace {

bool overlap(const TensorLifetime &a, const TensorLifetime &b) { return a.first <= b.last && b.first <= a.last; }

} // namespace

TEST_CASE("plan_arena: tensors alive together never share bytes; a chain reuses memory") {
  // a -> b -> c -> d, each read only by the next, plus e alive throughout.
  std::vector<TensorLifetime> t{{1000, 0, 1}, {2000, 1, 2}, {1000, 2, 3}, {3000, 3, 4}, {100, 0, 4}};
  ArenaLayout l = plan_arena(t);
  REQUIRE(l.offsets.size() == t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    CHECK(l.offsets[i] % 64 == 0);
    CHECK(l.offsets[i] + t[i].bytes <= l.peak_bytes);
    for (size_t j = 0; j < i; ++j) {
      if (!overlap(t[i], t[j])) continue;
      const bool disjoint = l.offsets[i] + t[i].bytes <= l.offsets[j] || l.offsets[j] + t[j].bytes <= l.offsets[i];
      CHECK(disjoint);
    }
  }
  CHECK(l.sum_bytes == 1024 + 2048 + 1024 + 3008 + 128);
  CHECK(l.peak_bytes < l.sum_bytes);
}

TEST_CASE("graph: reads need an earlier writer; rewrites must be in place") {
  const NodeFn nothing = [](const NodeArgs &) {};
  SUBCASE("read before write") {
    Graph g;
    TensorRef a = g.tensor("a", 2, 2), b = g.tensor("b", 2, 2);
    g.add("uses_a", {a}, {b}, nothing);
    g.add("makes_a", {}, {a}, nothing);
    CHECK_THROWS_WITH_AS(g.plan(), "graph: node uses_a reads a before any node writes it", std::logic_error);
  }
  SUBCASE("overwrite by an unrelated node") {
    Graph g;
    TensorRef a = g.tensor("a", 2, 2), b = g.tensor("b", 2, 2);
    g.add("first", {}, {a}, nothing);
    g.add("second", {}, {a}, nothing);
    g.add("reader", {a}, {b}, nothing);
    CHECK_THROWS_WITH_AS(g.plan(), "graph: node second overwrites a (written by first) without reading it",
                         std::logic_error);
  }
  SUBCASE("an external tensor is read-only and takes no arena room") {
    Graph g;
    TensorRef in = g.external("in", 1, 4), a = g.tensor("a", 1, 4);
    g.add("writes the input", {in}, {in}, nothing);
    g.add("reads it", {in}, {a}, nothing);
    CHECK_THROWS_WITH_AS(g.plan(), "graph: node writes the input writes the external tensor in", std::logic_error);
  }
  SUBCASE("a result must be marked to be read after the run") {
    Graph g;
    TensorRef a = g.tensor("a", 1, 4);
    g.add("make a", {}, {a}, nothing);
    g.plan();
    g.allocate();
    CHECK_THROWS_WITH_AS(g.result(a), "graph: a is read after the run but is not a result", std::logic_error);
  }
  SUBCASE("a view is read in its own dtype") {
    Graph g;
    TensorRef h = g.tensor("h", 1, 4, DType::bf16);
    std::string error;
    g.add("reads bf16 as f32", {}, {h}, [&](const NodeArgs &io) {
      try {
        (void)io.out(0).f32();
      } catch (const std::logic_error &e) {
        error = e.what();
      }
    });
    g.plan();
    CHECK(g.tensor_bytes() == 64);  // 4 x 2 bytes, 64-byte aligned
    g.allocate();
    g.run();
    CHECK(error == "tensor h is bf16, read as f32");
  }
  SUBCASE("an in-place update and a column view are fine; every output is seen right after its node") {
    Graph g;
    g.set_batch(1);
    TensorRef in = g.external("in", 2, 4), x = g.tensor("x", 2, 4), y = g.tensor("y", 2, 2);
    TensorRef half = g.tensor("half", 2, 2, DType::bf16);
    g.add("copy in", {in}, {x}, [](const NodeArgs &io) {
      for (int i = 0; i < 8; ++i) io.out(0).f32()[i] = io.in(0).f32()[i];
    });
    g.add("x += 1", {x}, {x}, [](const NodeArgs &io) {
      for (int i = 0; i < 8; ++i) io.out(0).f32()[i] += 1;
    });
    g.add("copy right half", {x.columns(2, 2)}, {y, half}, [](const NodeArgs &io) {
      const TensorView &right = io.in(0);
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) {
          const float v = right.f32()[r * right.ld() + c];
          io.out(0).f32()[r * 2 + c] = v;
          uint32_t bits;
          std::memcpy(&bits, &v, sizeof bits);
          io.out(1).bf16()[r * 2 + c] = static_cast<uint16_t>(bits >> 16);
        }
    });
    g.mark_result(y);
    g.plan();
    CHECK(g.tensor_bytes() == 3 * 64);
    g.allocate();
    std::vector<float> input{0, 1, 2, 3, 4, 5, 6, 7};
    g.bind(in, input.data());
    std::vector<std::string> seen;
    NodeObserver obs = [&](const Node &n, double) {
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const TensorView &v = n.outputs[k];
        seen.push_back(n.name + ":" + dtype_name(v.dtype()) + ":" + std::to_string(v.value(1, 1)) + ":" +
                       std::to_string(n.output_shapes[k][1]));
      }
    };
    g.run(&obs);
    CHECK(seen == std::vector<std::string>{"copy in:f32:5.000000:2", "x += 1:f32:6.000000:2",
                                           "copy right half:f32:8.000000:2", "copy right half:bf16:8.000000:2"});
    CHECK(g.result(y).f32()[3] == 8.0f);
    CHECK(input[5] == 5.0f);  // the external input is never written
  }
}

TEST_CASE("graph: POLA_POISON_ARENA turns a read of memory whose lifetime ended into NaN") {
  // A node can reach memory only through its declared views; the one way to
  // read undeclared memory is to keep a pointer from an earlier node, as a
  // buggy kernel keeping a stale buffer would. `a` is planned dead after
  // `b = a + 1`; `out = a + b` reads it through such a pointer. Without
  // poisoning the stale values may still be there and the answer looks
  // right; with it they are NaN.
  auto build_and_run = [](bool poison) {
    if (poison) setenv("POLA_POISON_ARENA", "1", 1);
    else unsetenv("POLA_POISON_ARENA");
    Graph g;
    TensorRef a = g.tensor("a", 1, 4), b = g.tensor("b", 1, 4), out = g.tensor("out", 1, 4);
    const float *stale = nullptr;
    g.add("make a", {}, {a}, [&stale](const NodeArgs &io) {
      for (int i = 0; i < 4; ++i) io.out(0).f32()[i] = float(i);
      stale = io.out(0).f32();
    });
    g.add("b = a + 1", {a}, {b}, [](const NodeArgs &io) {
      for (int i = 0; i < 4; ++i) io.out(0).f32()[i] = io.in(0).f32()[i] + 1;
    });
    g.add("out = a + b (a undeclared)", {b}, {out}, [&stale](const NodeArgs &io) {
      for (int i = 0; i < 4; ++i) io.out(0).f32()[i] = stale[i] + io.in(0).f32()[i];
    });
    g.mark_result(out);
    g.plan();
    g.allocate();
    g.run();
    const TensorView v = g.result(out);
    std::vector<float> values(v.f32(), v.f32() + 4);
    unsetenv("POLA_POISON_ARENA");
    return values;
  };
  const std::vector<float> poisoned = build_and_run(true);
  for (float x : poisoned) CHECK(std::isnan(x));
  // A graph whose edges are right is unaffected.
  setenv("POLA_POISON_ARENA", "1", 1);
  Graph g;
  TensorRef a = g.tensor("a", 1, 4), b = g.tensor("b", 1, 4);
  g.add("make a", {}, {a}, [](const NodeArgs &io) { for (int i = 0; i < 4; ++i) io.out(0).f32()[i] = float(i); });
  g.add("b = 2a", {a}, {b}, [](const NodeArgs &io) {
    for (int i = 0; i < 4; ++i) io.out(0).f32()[i] = 2 * io.in(0).f32()[i];
  });
  g.mark_result(b);
  g.plan();
  g.allocate();
  g.run();
  unsetenv("POLA_POISON_ARENA");
  for (int i = 0; i < 4; ++i) CHECK(g.result(b).f32()[i] == 2.0f * float(i));
}
