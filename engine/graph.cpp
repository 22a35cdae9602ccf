#include "engine/graph.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

namespace pola {
namespace {

bool contains(const std::vector<TensorView> &list, const Tensor *t) {
  for (const TensorView &v : list)
    if (&v.tensor() == t) return true;
  return false;
}

} // namespace

TensorRef Graph::make(const std::string &name, int64_t rows, int64_t cols, DType dtype, bool external) {
  if (!tensor_names_.insert(name).second) throw std::logic_error("graph: two tensors named " + name);
  tensors_.emplace_back(name, dtype, rows, cols, external);
  return TensorRef{&tensors_.back(), 0, rows, cols, cols};
}

TensorRef Graph::tensor(const std::string &name, int64_t rows, int64_t cols, DType dtype) {
  return make(name, rows, cols, dtype, false);
}

TensorRef Graph::external(const std::string &name, int64_t rows, int64_t cols, DType dtype) {
  return make(name, rows, cols, dtype, true);
}

void Graph::bind(const TensorRef &t, const void *data) {
  if (!t.tensor->external()) throw std::logic_error("graph: " + t.name() + " is not an external tensor");
  // Nodes only read an external tensor (plan() refuses a write to one).
  t.tensor->data_ = static_cast<std::byte *>(const_cast<void *>(data));
}

void Graph::add(std::string name, std::vector<TensorRef> inputs, std::vector<TensorRef> outputs, NodeFn run,
                Precision precision) {
  Node node;
  node.name = std::move(name);
  node.run = std::move(run);
  node.precision = precision;
  for (const TensorRef &r : inputs) node.inputs.push_back(TensorView(r));
  for (const TensorRef &r : outputs) {
    node.outputs.push_back(TensorView(r));
    if (r.rows == batch_) node.output_shapes.push_back({batch_, r.cols});
    else node.output_shapes.push_back({batch_, r.rows / batch_, r.cols});
  }
  nodes_.push_back(std::move(node));
}

void Graph::mark_result(const TensorRef &t) { results_.push_back(t.tensor); }

TensorView Graph::result(const TensorRef &t) const {
  for (const Tensor *k : results_)
    if (k == t.tensor) return TensorView(t);
  throw std::logic_error("graph: " + t.name() + " is read after the run but is not a result");
}

void Graph::plan() {
  std::unordered_map<const Tensor *, size_t> index;
  for (const Tensor &t : tensors_) index.emplace(&t, index.size());
  std::vector<TensorLifetime> life(tensors_.size());
  std::vector<const Node *> writer(tensors_.size(), nullptr);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Node &node = nodes_[n];
    for (const TensorView &v : node.inputs) {
      const Tensor *t = &v.tensor();
      const size_t i = index.at(t);
      if (!writer[i] && !t->external())
        throw std::logic_error("graph: node " + node.name + " reads " + t->name() + " before any node writes it");
      life[i].last = n;
    }
    for (const TensorView &v : node.outputs) {
      const Tensor *t = &v.tensor();
      const size_t i = index.at(t);
      if (t->external()) throw std::logic_error("graph: node " + node.name + " writes the external tensor " + t->name());
      if (writer[i] && !contains(node.inputs, t))
        throw std::logic_error("graph: node " + node.name + " overwrites " + t->name() + " (written by " +
                               writer[i]->name + ") without reading it");
      if (!writer[i]) life[i].first = n;
      writer[i] = &node;
      life[i].last = n;
    }
  }
  for (const Tensor *t : results_) life[index.at(t)].last = nodes_.size();
  // The arena holds the graph's own tensors; external ones take no room.
  std::vector<TensorLifetime> planned;
  std::vector<size_t> planned_index;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].external()) continue;
    if (!writer[i]) throw std::logic_error("graph: no node writes " + tensors_[i].name());
    life[i].bytes = tensors_[i].bytes();
    planned.push_back(life[i]);
    planned_index.push_back(i);
  }
  layout_ = plan_arena(planned);
  offsets_.assign(tensors_.size(), 0);
  for (size_t j = 0; j < planned_index.size(); ++j) offsets_[planned_index[j]] = layout_.offsets[j];
  born_at_.assign(nodes_.size(), {});
  dead_after_.assign(nodes_.size(), {});
  for (size_t i : planned_index) {
    born_at_[life[i].first].push_back(&tensors_[i]);
    if (life[i].last < nodes_.size()) dead_after_[life[i].last].push_back(&tensors_[i]);
  }
}

// All-ones bytes: NaN as f32 and as bf16.
void Graph::poison(const std::vector<const Tensor *> &tensors) const {
  for (const Tensor *t : tensors) std::memset(t->data_, 0xff, t->bytes());
}

void Graph::allocate() {
  arena_.allocate(layout_.peak_bytes);
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (!tensors_[i].external()) tensors_[i].data_ = reinterpret_cast<std::byte *>(arena_.base() + offsets_[i]);
  const char *p = std::getenv("POLA_POISON_ARENA");
  poison_ = p && std::strcmp(p, "1") == 0;
}

void Graph::run(const NodeObserver *observer) const {
  if (!observer && !poison_) {
    for (const auto &n : nodes_) n.run(NodeArgs(n.inputs, n.outputs));
    return;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &n = nodes_[i];
    if (poison_) poison(born_at_[i]);
    auto t0 = std::chrono::steady_clock::now();
    n.run(NodeArgs(n.inputs, n.outputs));
    auto t1 = std::chrono::steady_clock::now();
    if (observer) (*observer)(n, std::chrono::duration<double>(t1 - t0).count());
    if (poison_) poison(dead_after_[i]);
  }
}

} // namespace pola
