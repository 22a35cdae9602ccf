// The graph executor: an ordered list of named nodes built once per input
// shape. Every node may expose its output as a token tensor so any
// intermediate can be dumped by name and compared with the reference.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/arena.h"

namespace pola {

// A 2-D view (rows x cols, row stride ld) into an arena slot, reported to
// observers with its logical shape (e.g. batch, tokens, channels).
struct TensorView2D {
  Slot *slot = nullptr;
  size_t offset = 0;
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<int64_t> shape;
  const float *data() const { return slot->ptr + offset; }
};

struct Node {
  std::string name;
  std::function<void()> run;
  bool has_output = false;
  TensorView2D output;
};

// Called after each node that has an output (dumping, profiling).
using NodeObserver = std::function<void(const Node &node, double seconds)>;

class Graph {
 public:
  void add(std::string name, std::function<void()> run);
  void add(std::string name, std::function<void()> run, TensorView2D output);
  void run(const NodeObserver *observer = nullptr) const;
  const std::vector<Node> &nodes() const { return nodes_; }

 private:
  std::vector<Node> nodes_;
};

} // namespace pola
