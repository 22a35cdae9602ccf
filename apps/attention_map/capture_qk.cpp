#include "capture_qk.h"

#include <stdexcept>
#include <string>

namespace pola::attention_map {
namespace {

// Copies `rows` rows of columns [col, col + cols) of a node's output.
std::vector<float> copy_columns(const TensorView &v, int64_t rows, int64_t col, int64_t cols) {
  if (v.rows() < rows || v.cols() < col + cols)
    throw std::logic_error("node output is " + std::to_string(v.rows()) + " x " + std::to_string(v.cols()) +
                           ", expected at least " + std::to_string(rows) + " x " + std::to_string(col + cols));
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = v.value(r, col + c);
  return out;
}

} // namespace

CapturedQK capture_qk(Model &model, const float *input, const BlockLayout &L) {
  CapturedQK got;
  const int64_t C = L.dim;
  const bool pvt = L.family == Family::pvt;
  const std::string q_node = L.block + (pvt ? ".attn.qg" : ".attn.qkg");
  const std::string k_node = L.block + (pvt ? ".attn.k" : ".attn.qkg");
  // Batch 1, so image 0's rows come first. The arena plan reuses these
  // tensors' memory for later nodes, hence the copy inside the callback.
  NodeObserver keep = [&](const Node &node, double) {
    if (node.outputs.empty()) return;
    if (node.name == q_node) got.q = copy_columns(node.outputs[0], L.q_rows, 0, C);
    if (node.name == k_node) got.k = copy_columns(node.outputs[0], L.k_rows, pvt ? 0 : C, C);
  };
  std::vector<float> logits(static_cast<size_t>(model.config().num_classes));
  model.run(input, 1, logits.data(), &keep);
  if (got.q.empty() || got.k.empty())
    throw std::logic_error("the engine reported no node '" + (got.q.empty() ? q_node : k_node) +
                           "'; the node names of engine/models changed");
  return got;
}

} // namespace pola::attention_map
