// The graph's checks of its own edges and the arena plan from tensor lifetimes.
#include <doctest/doctest.h>

#include <cmath>
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
  SUBCASE("read before write") {
    Graph g;
    TensorView a = g.tensor("a", 2, 2), b = g.tensor("b", 2, 2);
    g.add("uses_a", {{a}, {b}}, [] {});
    g.add("makes_a", {{}, {a}}, [] {});
    CHECK_THROWS_WITH_AS(g.plan(), "graph: node uses_a reads a before any node writes it", std::logic_error);
  }
  SUBCASE("overwrite by an unrelated node") {
    Graph g;
    TensorView a = g.tensor("a", 2, 2), b = g.tensor("b", 2, 2);
    g.add("first", {{}, {a}}, [] {});
    g.add("second", {{}, {a}}, [] {});
    g.add("reader", {{a}, {b}}, [] {});
    CHECK_THROWS_WITH_AS(g.plan(), "graph: node second overwrites a (written by first) without reading it",
                         std::logic_error);
  }
  SUBCASE("an in-place update and a column view are fine; outputs are seen right after their node") {
    Graph g;
    TensorView x = g.tensor("x", 2, 4), y = g.tensor("y", 2, 2);
    g.add("fill", {{}, {x}}, [x] { for (int i = 0; i < 8; ++i) x.ptr()[i] = float(i); });
    g.add("x += 1", {{x}, {x}}, [x] { for (int i = 0; i < 8; ++i) x.ptr()[i] += 1; }, x, {1, 2, 4});
    TensorView right = x.columns(2, 2);
    g.add("copy right half", {{right}, {y}}, [right, y] {
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) y.ptr()[r * 2 + c] = right.ptr()[r * right.ld + c];
    }, y, {1, 2, 2});
    g.keep_to_end(y);
    g.plan();
    CHECK(g.tensor_bytes() == 128);
    g.allocate();
    std::vector<std::string> seen;
    NodeObserver obs = [&](const Node &n, double) {
      if (n.has_output) seen.push_back(n.name + ":" + std::to_string(n.output.ptr()[n.output.ld + 1]));
    };
    g.run(&obs);
    CHECK(seen == std::vector<std::string>{"x += 1:6.000000", "copy right half:8.000000"});
  }
}

TEST_CASE("graph: POLA_POISON_ARENA turns a read the edges do not declare into NaN") {
  // `a` is planned dead after `b = a + 1`; `sum` reads it anyway through its
  // closure (the edges name only b). Without poisoning the stale values may
  // still be there and the answer looks right; with it they are NaN.
  auto build_and_run = [](bool poison) {
    if (poison) setenv("POLA_POISON_ARENA", "1", 1);
    else unsetenv("POLA_POISON_ARENA");
    Graph g;
    TensorView a = g.tensor("a", 1, 4), b = g.tensor("b", 1, 4), out = g.tensor("out", 1, 4);
    g.add("make a", {{}, {a}}, [a] { for (int i = 0; i < 4; ++i) a.ptr()[i] = float(i); });
    g.add("b = a + 1", {{a}, {b}}, [a, b] { for (int i = 0; i < 4; ++i) b.ptr()[i] = a.ptr()[i] + 1; });
    g.add("out = a + b (a undeclared)", {{b}, {out}},
          [a, b, out] { for (int i = 0; i < 4; ++i) out.ptr()[i] = a.ptr()[i] + b.ptr()[i]; });
    g.keep_to_end(out);
    g.plan();
    g.allocate();
    g.run();
    std::vector<float> v(out.ptr(), out.ptr() + 4);
    unsetenv("POLA_POISON_ARENA");
    return v;
  };
  const std::vector<float> poisoned = build_and_run(true);
  for (float x : poisoned) CHECK(std::isnan(x));
  // A graph whose edges are right is unaffected.
  setenv("POLA_POISON_ARENA", "1", 1);
  Graph g;
  TensorView a = g.tensor("a", 1, 4), b = g.tensor("b", 1, 4);
  g.add("make a", {{}, {a}}, [a] { for (int i = 0; i < 4; ++i) a.ptr()[i] = float(i); });
  g.add("b = 2a", {{a}, {b}}, [a, b] { for (int i = 0; i < 4; ++i) b.ptr()[i] = 2 * a.ptr()[i]; });
  g.keep_to_end(b);
  g.plan();
  g.allocate();
  g.run();
  unsetenv("POLA_POISON_ARENA");
  for (int i = 0; i < 4; ++i) CHECK(b.ptr()[i] == 2.0f * float(i));
}
