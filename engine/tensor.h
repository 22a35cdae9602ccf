// The graph's activations. A Tensor is a named rows x cols block of one dtype
// whose memory the graph's arena plan places. Builders hold TensorRefs (a
// tensor, or a column range of it), which carry no memory: a node's compute
// function reaches memory only through the TensorViews the graph hands it
// for the node's declared inputs and outputs, so a read the edges do not
// declare cannot be written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/dtype.h"

namespace pola {

struct QuantParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

class Graph;

class Tensor {
 public:
  Tensor(std::string name, DType dtype, int64_t rows, int64_t cols, bool external)
      : name_(std::move(name)), dtype_(dtype), rows_(rows), cols_(cols), external_(external) {}
  const std::string &name() const { return name_; }
  DType dtype() const { return dtype_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  size_t bytes() const { return static_cast<size_t>(rows_ * cols_) * dtype_bytes(dtype_); }
  // Bound by the caller before each run (the image batch), never planned in the arena.
  bool external() const { return external_; }
  QuantParams quant;

 private:
  friend class Graph;
  friend class TensorView;
  std::string name_;
  DType dtype_;
  int64_t rows_, cols_;
  bool external_;
  std::byte *data_ = nullptr;  // set by Graph::allocate() or Graph::bind(); may share bytes with tensors of disjoint lifetime
};

// A region of a tensor as the builder sees it: which tensor, which columns,
// the row stride; no memory.
struct TensorRef {
  Tensor *tensor = nullptr;
  int64_t offset = 0;  // elements from the tensor's start
  int64_t rows = 0, cols = 0, ld = 0;

  DType dtype() const { return tensor->dtype(); }
  const std::string &name() const { return tensor->name(); }
  TensorRef columns(int64_t first, int64_t count) const { return TensorRef{tensor, offset + first, rows, count, ld}; }
};

// A TensorRef with access to its memory: what a node's compute function and
// the graph's observers get. Only the graph makes them.
class TensorView {
 public:
  TensorView() = default;
  const TensorRef &ref() const { return ref_; }
  const Tensor &tensor() const { return *ref_.tensor; }
  DType dtype() const { return ref_.dtype(); }
  int64_t rows() const { return ref_.rows; }
  int64_t cols() const { return ref_.cols; }
  int64_t ld() const { return ref_.ld; }  // in elements
  void *data() const { return ref_.tensor->data_ + static_cast<size_t>(ref_.offset) * dtype_bytes(dtype()); }
  float *f32() const { return static_cast<float *>(typed(DType::f32)); }
  uint16_t *bf16() const { return static_cast<uint16_t *>(typed(DType::bf16)); }
  int8_t *s8() const { return static_cast<int8_t *>(typed(DType::s8)); }
  // Element (r, c) as a float, whatever the dtype (observers, dumps).
  float value(int64_t r, int64_t c) const;

 private:
  friend class Graph;
  explicit TensorView(const TensorRef &ref) : ref_(ref) {}
  void *typed(DType want) const {
    if (dtype() != want)
      throw std::logic_error("tensor " + ref_.tensor->name() + " is " + dtype_name(dtype()) + ", read as " +
                             dtype_name(want));
    return data();
  }
  TensorRef ref_;
};

} // namespace pola
