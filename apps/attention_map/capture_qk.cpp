#include "capture_qk.h"

#include <stdexcept>
#include <string>

#include "engine/models/qk_taps.h"

namespace pola::attention_map {
namespace {

// The one place that reads a graph Node: when `node` is `want`, copies `rows`
// rows of columns [col, col + cols) of its output into `out`.
void take_columns(const Node &node, const std::string &want, int64_t rows, int64_t col, int64_t cols,
                  std::vector<float> &out) {
  if (node.outputs.empty() || node.name != want) return;
  const TensorView &v = node.outputs[0];
  if (v.rows() < rows || v.cols() < col + cols)
    throw std::logic_error("node " + want + " output is " + std::to_string(v.rows()) + " x " +
                           std::to_string(v.cols()) +
                           ", expected at least " + std::to_string(rows) + " x " + std::to_string(col + cols));
  out.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = v.value(r, col + c);
}

} // namespace

CapturedQK capture_qk(Model &model, const float *input, const BlockLayout &L) {
  CapturedQK got;
  const models::QkTaps taps = models::qk_taps(model.config().family, L.block, L.dim);
  // Batch 1, so image 0's rows come first. The arena plan reuses these
  // tensors' memory for later nodes, hence the copy inside the callback.
  NodeObserver keep = [&](const Node &node, double) {
    take_columns(node, taps.q_node, L.q_rows, taps.q_col, L.dim, got.q);
    take_columns(node, taps.k_node, L.k_rows, taps.k_col, L.dim, got.k);
  };
  std::vector<float> logits(static_cast<size_t>(model.config().num_classes));
  model.run(input, 1, logits.data(), &keep);
  if (got.q.empty() || got.k.empty())
    throw std::logic_error("the engine reported no node '" + (got.q.empty() ? taps.q_node : taps.k_node) +
                           "'; the node names of engine/models changed");
  return got;
}

} // namespace pola::attention_map
