// The graph executor: an ordered list of named nodes built once per input
// shape. A node is its declared inputs and outputs plus a compute function
// that receives exactly those as views (NodeArgs): the edges the planner
// reads are the arguments the computation gets, so they cannot disagree.
// From the edges the graph checks its own order (a read follows a write; a
// tensor is rewritten only in place), places tensors in one arena by
// lifetime, and lets observers see every node's outputs (dumps, profiles,
// attention maps).
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

// What a compute function gets: its node's inputs and outputs, in the order
// they were declared.
class NodeArgs {
 public:
  NodeArgs(const std::vector<TensorView> &in, const std::vector<TensorView> &out) : in_(in), out_(out) {}
  const TensorView &in(size_t i) const { return in_.at(i); }
  const TensorView &out(size_t i) const { return out_.at(i); }
  size_t inputs() const { return in_.size(); }
  size_t outputs() const { return out_.size(); }

 private:
  const std::vector<TensorView> &in_, &out_;
};

using NodeFn = std::function<void(const NodeArgs &)>;

struct Node {
  std::string name;
  NodeFn run;
  // The declared edges. A node that writes a tensor some earlier node wrote
  // must read it too (x += f(x)): that is the only way a value is replaced.
  std::vector<TensorView> inputs, outputs;
  // Per output, its logical shape for observers, e.g. (batch, tokens, channels).
  std::vector<std::vector<int64_t>> output_shapes;
  Precision precision = Precision::fp32; // of the node's arithmetic (engine/precision.h)
};

// Called after each node (dumping, profiling). The node's output views are
// valid only then (later tensors may reuse their memory): copy what you keep.
using NodeObserver = std::function<void(const Node &node, double seconds)>;

class Graph {
 public:
  // A new dense rows x cols tensor in the arena; names are unique within a graph.
  TensorRef tensor(const std::string &name, int64_t rows, int64_t cols, DType dtype = DType::f32);
  // A tensor the caller provides before each run (bind()): read-only to nodes.
  TensorRef external(const std::string &name, int64_t rows, int64_t cols, DType dtype = DType::f32);
  void bind(const TensorRef &external, const void *data);

  // Adds a node reading `inputs` and writing `outputs`; `batch` gives the
  // outputs' logical shapes: (batch, cols) when a tensor has one row per
  // image, else (batch, rows / batch, cols).
  void add(std::string name, std::vector<TensorRef> inputs, std::vector<TensorRef> outputs, NodeFn run,
           Precision precision = Precision::fp32);
  void set_batch(int64_t batch) { batch_ = batch; }
  // Makes `t` a result: alive after the last node, for the caller to read (the logits).
  void mark_result(const TensorRef &t);
  // A view of a result, valid after run().
  TensorView result(const TensorRef &t) const;

  // Checks the edges and lays out the arena; throws std::logic_error naming
  // the node and tensor of a bad order. Call once, after building.
  void plan();
  size_t planned_bytes() const { return layout_.peak_bytes; }
  size_t tensor_bytes() const { return layout_.sum_bytes; }  // without sharing
  // Allocates the planned arena and points every tensor into it. With
  // POLA_POISON_ARENA=1 in the environment (the tests and sanitizer runs set
  // it), run() then fills each tensor with all-ones bytes (NaN in f32 and
  // bf16) just before the node that first writes it and just after its last
  // reader: a kernel that reads memory whose lifetime ended, or leaves part
  // of its output unwritten, makes NaN instead of a plausible answer.
  void allocate();

  void run(const NodeObserver *observer = nullptr) const;
  const std::vector<Node> &nodes() const { return nodes_; }

 private:
  TensorRef make(const std::string &name, int64_t rows, int64_t cols, DType dtype, bool external);
  std::deque<Tensor> tensors_;  // stable addresses: refs point here
  std::unordered_set<std::string> tensor_names_;
  std::vector<const Tensor *> results_;
  std::vector<Node> nodes_;
  int64_t batch_ = 1;
  ArenaLayout layout_;
  std::vector<size_t> offsets_;  // per tensor, bytes from the arena's start
  Arena arena_;
  // Per node, the tensors it writes first and those it reads last (planned).
  std::vector<std::vector<const Tensor *>> born_at_, dead_after_;
  bool poison_ = false;
  void poison(const std::vector<const Tensor *> &tensors) const;
};

} // namespace pola
