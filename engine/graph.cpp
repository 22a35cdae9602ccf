#include "engine/graph.h"

namespace pola {

void Graph::add(std::string name, std::function<void()> run) {
  nodes_.push_back(Node{std::move(name), std::move(run), false, {}});
}

void Graph::add(std::string name, std::function<void()> run, TensorView2D output) {
  nodes_.push_back(Node{std::move(name), std::move(run), true, std::move(output)});
}

void Graph::run(const NodeObserver *observer) const {
  if (!observer) {
    for (const auto &n : nodes_) n.run();
    return;
  }
  for (const auto &n : nodes_) {
    auto t0 = std::chrono::steady_clock::now();
    n.run();
    auto t1 = std::chrono::steady_clock::now();
    (*observer)(n, std::chrono::duration<double>(t1 - t0).count());
  }
}

} // namespace pola
