// The graph's activations: a Tensor is a named rows x cols block of floats
// whose memory the graph's arena plan places; a TensorView is the one way
// nodes and observers look at it (a row stride and a column range, e.g. the
// q and g parts of one qg tensor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pola {

struct Tensor {
  std::string name;
  int64_t rows = 0, cols = 0;
  float *data = nullptr;  // set by Graph::allocate(); the arena plan may share it with tensors of disjoint lifetime
};

struct TensorView {
  Tensor *tensor = nullptr;
  size_t offset = 0;  // floats from tensor->data
  int64_t rows = 0, cols = 0, ld = 0;

  float *ptr() const { return tensor->data + offset; }
  TensorView columns(int64_t first, int64_t count) const {
    return TensorView{tensor, offset + static_cast<size_t>(first), rows, count, ld};
  }
};

} // namespace pola
