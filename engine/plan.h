// A plan: the graph of one model for one batch size (with its arena) and its
// oneDNN primitives, built once and reused. A plan is used by one thread at a
// time; the model keeps a pool of them so several threads can run at once.
#pragma once

#include <memory>
#include <vector>

#include <dnnl.hpp>

#include "engine/graph.h"

namespace pola {

struct Plan {
  int batch = 1;
  int threads = 1;
  Graph graph;
  dnnl::stream stream;
  const float *input = nullptr;       // (batch, in_chans, img, img), set before each run
  TensorView logits;                  // (batch, num_classes), kept to the end of the graph
  std::vector<std::shared_ptr<void>> keep_alive; // primitives the graph's nodes use
};

} // namespace pola
