#include "engine/graph.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

namespace pola {
namespace {

std::vector<const Tensor *> tensors_of(const std::vector<TensorView> &views) {
  std::vector<const Tensor *> out;
  for (const auto &v : views) out.push_back(v.tensor);
  return out;
}

bool contains(const std::vector<const Tensor *> &list, const Tensor *t) {
  for (const Tensor *x : list)
    if (x == t) return true;
  return false;
}

} // namespace

TensorView Graph::tensor(const std::string &name, int64_t rows, int64_t cols) {
  if (!tensor_names_.insert(name).second) throw std::logic_error("graph: two tensors named " + name);
  tensors_.push_back(Tensor{name, rows, cols, nullptr});
  return TensorView{&tensors_.back(), 0, rows, cols, cols};
}

void Graph::add(std::string name, Edges edges, std::function<void()> run) {
  nodes_.push_back(Node{std::move(name), std::move(run), tensors_of(edges.reads), tensors_of(edges.writes), false,
                        {}, {}});
}

void Graph::add(std::string name, Edges edges, std::function<void()> run, TensorView output,
                std::vector<int64_t> output_shape) {
  nodes_.push_back(Node{std::move(name), std::move(run), tensors_of(edges.reads), tensors_of(edges.writes), true,
                        output, std::move(output_shape)});
}

void Graph::set_last_precision(Precision p) {
  if (nodes_.empty()) throw std::logic_error("graph: a precision for no node");
  nodes_.back().precision = p;
}

void Graph::keep_to_end(const TensorView &t) { kept_to_end_.push_back(t.tensor); }

void Graph::plan() {
  std::unordered_map<const Tensor *, size_t> index;
  for (const Tensor &t : tensors_) index.emplace(&t, index.size());
  std::vector<TensorLifetime> life(tensors_.size());
  std::vector<const Node *> writer(tensors_.size(), nullptr);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Node &node = nodes_[n];
    for (const Tensor *t : node.reads) {
      const size_t i = index.at(t);
      if (!writer[i]) throw std::logic_error("graph: node " + node.name + " reads " + t->name + " before any node writes it");
      life[i].last = n;
    }
    for (const Tensor *t : node.writes) {
      const size_t i = index.at(t);
      if (writer[i] && !contains(node.reads, t))
        throw std::logic_error("graph: node " + node.name + " overwrites " + t->name + " (written by " +
                               writer[i]->name + ") without reading it");
      if (!writer[i]) life[i].first = n;
      writer[i] = &node;
      life[i].last = n;
    }
  }
  for (const Tensor *t : kept_to_end_) life[index.at(t)].last = nodes_.size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!writer[i]) throw std::logic_error("graph: no node writes " + tensors_[i].name);
    life[i].bytes = static_cast<size_t>(tensors_[i].rows * tensors_[i].cols) * sizeof(float);
  }
  layout_ = plan_arena(life);
  born_at_.assign(nodes_.size(), {});
  dead_after_.assign(nodes_.size(), {});
  for (size_t i = 0; i < tensors_.size(); ++i) {
    born_at_[life[i].first].push_back(&tensors_[i]);
    if (life[i].last < nodes_.size()) dead_after_[life[i].last].push_back(&tensors_[i]);
  }
}

// All-ones bytes: NaN as a float, and as each bf16 half of one.
void Graph::poison(const std::vector<const Tensor *> &tensors) const {
  for (const Tensor *t : tensors)
    std::memset(t->data, 0xff, static_cast<size_t>(t->rows * t->cols) * sizeof(float));
}

void Graph::allocate() {
  arena_.allocate(layout_.peak_bytes);
  for (size_t i = 0; i < tensors_.size(); ++i)
    tensors_[i].data = reinterpret_cast<float *>(arena_.base() + layout_.offsets[i]);
  const char *p = std::getenv("POLA_POISON_ARENA");
  poison_ = p && std::strcmp(p, "1") == 0;
}

void Graph::run(const NodeObserver *observer) const {
  if (!observer && !poison_) {
    for (const auto &n : nodes_) n.run();
    return;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &n = nodes_[i];
    if (poison_) poison(born_at_[i]);
    auto t0 = std::chrono::steady_clock::now();
    n.run();
    auto t1 = std::chrono::steady_clock::now();
    if (observer) (*observer)(n, std::chrono::duration<double>(t1 - t0).count());
    if (poison_) poison(dead_after_[i]);
  }
}

} // namespace pola
