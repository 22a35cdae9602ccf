// The graph executor: an ordered list of named nodes built once per input
// shape. Every node declares the tensors it reads and writes, so the graph
// can check its own order (a read follows a write; a tensor is rewritten only
// in place), place tensors in one arena by lifetime, and let an observer see
// a node's output tensor by name (dumps, profiles, attention maps).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/arena.h"
#include "engine/precision.h"
#include "engine/tensor.h"

namespace pola {

// What a node touches. A node that writes a tensor some earlier node wrote
// must read it too (x += f(x)): that is the only way a value is replaced.
struct Edges {
  std::vector<TensorView> reads, writes;
};

struct Node {
  std::string name;
  std::function<void()> run;
  std::vector<const Tensor *> reads, writes;
  // Shown to observers, right after the node runs: the tensor is valid then
  // (it may share memory with later tensors, so observers copy what they keep).
  bool has_output = false;
  TensorView output;
  std::vector<int64_t> output_shape;  // logical, e.g. (batch, tokens, channels)
  Precision precision = Precision::fp32; // of the node's arithmetic (engine/precision.h)
};

// Called after each node (dumping, profiling).
using NodeObserver = std::function<void(const Node &node, double seconds)>;

class Graph {
 public:
  // A new dense rows x cols tensor; names are unique within a graph.
  TensorView tensor(const std::string &name, int64_t rows, int64_t cols);
  void add(std::string name, Edges edges, std::function<void()> run);
  void add(std::string name, Edges edges, std::function<void()> run, TensorView output,
           std::vector<int64_t> output_shape);
  // Records the precision the last node added computes in.
  void set_last_precision(Precision p);
  // Keeps `t` alive after the last node (e.g. the logits the caller copies).
  void keep_to_end(const TensorView &t);

  // Checks the edges and lays out the arena; throws std::logic_error naming
  // the node and tensor of a bad order. Call once, after building.
  void plan();
  size_t planned_bytes() const { return layout_.peak_bytes; }
  size_t tensor_bytes() const { return layout_.sum_bytes; }  // without sharing
  // Allocates the planned arena and points every tensor into it. With
  // POLA_POISON_ARENA=1 in the environment (the sanitizer runs set it), run()
  // then fills each tensor with NaN just before the node that first writes it
  // and just after its last planned reader: a node that reads a tensor its
  // edges do not declare (so after the planner let its memory go), or that
  // leaves part of its output unwritten, makes NaN instead of a plausible
  // answer.
  void allocate();

  void run(const NodeObserver *observer = nullptr) const;
  const std::vector<Node> &nodes() const { return nodes_; }

 private:
  std::deque<Tensor> tensors_;  // stable addresses: views point here
  std::unordered_set<std::string> tensor_names_;
  std::vector<const Tensor *> kept_to_end_;
  std::vector<Node> nodes_;
  ArenaLayout layout_;
  Arena arena_;
  // Per node, the tensors it writes first and those it reads last (planned).
  std::vector<std::vector<const Tensor *>> born_at_, dead_after_;
  bool poison_ = false;
  void poison(const std::vector<const Tensor *> &tensors) const;
};

} // namespace pola
