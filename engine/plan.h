// A plan: the graph of one model for one input shape (batch, height, width)
// and one set of outputs, with its arena and oneDNN primitives, built once and
// reused. A plan is used by one thread at a time; the model keeps a bounded
// pool of them so several threads (or alternating sizes) can run without rebuilding.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <dnnl.hpp>

#include "engine/graph.h"
#include "engine/memory_budget.h"

namespace pola {

// What a run asks for: the input shape and which results to keep.
struct PlanKey {
  int batch = 1;
  int64_t height = 0, width = 0;
  unsigned stages = 0;  // bit i: keep stage i+1's tokens (features); later stages are not built
  bool pooled = false;  // keep the pooled embedding (before the head)
  bool logits = true;   // build the head and keep the logits
  bool operator==(const PlanKey &o) const {
    return batch == o.batch && height == o.height && width == o.width && stages == o.stages &&
           pooled == o.pooled && logits == o.logits;
  }
};

struct Plan {
  PlanKey key;
  int batch = 1;                      // = key.batch, read by the builders
  int threads = 1;
  Graph graph;
  dnnl::stream stream;
  TensorRef input;                    // (batch, in_chans * height * width), external: bound before each run
  // The graph's results (Graph::result):
  TensorRef logits;                   // (batch, num_classes) when key.logits
  TensorRef pooled;                   // (batch, channels) when key.pooled
  std::vector<TensorRef> stage_tokens; // per stage, (batch * tokens, channels) when its bit is set
  std::vector<std::shared_ptr<void>> owned; // primitives and size-dependent tables the graph's nodes use
  size_t side_bytes = 0;              // what those tables hold beside the arena
  // The most scratch one op of a run takes, all threads together. It comes
  // from the threads' scratch caches (kernels/scratch.h), which every op and
  // plan share, so it is not the plan's and stays when the plan is evicted.
  size_t scratch_bytes = 0;
  // The arena is allocated but its pages are not resident until the first
  // run touches them: until then the memory it was checked against is held
  // here, so concurrent builds do not count the same free memory twice.
  MemoryReservation reservation;
};

} // namespace pola
