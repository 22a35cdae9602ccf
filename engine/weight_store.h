// The model builders' view of a model file: tensors fetched by name with the
// shape the config implies (a mismatch is an InputError naming the file, the
// tensor and both shapes), bookkeeping of which tensors were used so that
// unexpected ones are refused, and storage for tensors derived at load time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "weights/model_file.h"

namespace pola {

// A tensor as the file stores it (for ops that convert it once anyway, such
// as the packed GEMM weights: a BF16 file is never widened in memory).
struct StoredWeight {
  const void *data = nullptr;
  weights::StoredDtype dtype = weights::StoredDtype::f32;
};

// An I8 weight as the file stores it (weights/FORMAT.md): the int8 values,
// row-major, and one float scale per row (output channel); the weight is
// q[i] * scale[row of i].
struct QuantizedWeight {
  const int8_t *q = nullptr;
  const float *scale = nullptr;
};

class WeightStore {
 public:
  explicit WeightStore(weights::ModelFile file) : file_(std::move(file)) {}

  // Every getter below marks what it reads as used; for a tensor named
  // `<prefix>.weight` also `<prefix>.input_scale` when the file has one, so
  // a float run of an int8 file, which never reads it, passes check_all_used.

  // The tensor `name`, which must exist with exactly `shape`, as float32 (a
  // BF16 tensor is widened once, an I8 one dequantized once, q * scale[row],
  // and kept with the model; its `_scale` is marked used).
  const float *get(const std::string &name, const std::vector<int64_t> &shape);
  // The same tensor as stored, without widening; an I8 tensor comes
  // dequantized, as F32 (as get()), for callers that know only float weights.
  StoredWeight get_stored(const std::string &name, const std::vector<int64_t> &shape);
  // Whether the file stores `name` as I8.
  bool stored_int8(const std::string &name) const;
  // The I8 tensor `name`, which must exist with exactly `shape`, and its
  // scales (`name`_scale, both marked used). InputError naming the file when
  // it is missing, mis-shaped or not stored as I8.
  QuantizedWeight get_int8(const std::string &name, const std::vector<int64_t> &shape);
  // The static activation scale `<prefix>.input_scale` (one F32 number,
  // finite and > 0, else InputError naming the file and the tensor) for the
  // weight `<prefix>.weight`, marked used; nullptr when the file has none.
  // `weight_name` must end in ".weight" (std::invalid_argument otherwise).
  const float *input_scale(const std::string &weight_name);
  // Marks a tensor as known but unused (e.g. PVT's final norm, stored buffers).
  void ignore(const std::string &name);
  // Throws if the file holds tensors no builder asked for.
  void check_all_used() const;

  // A tensor derived at load from stored ones (transformed weights), made
  // once under `key` and kept alive with the model. Thread-safe.
  const float *derived(const std::string &key, const std::function<std::vector<float>()> &make);
  // The same for int8 values (rows of an I8 weight gathered for a fused projection's part).
  const int8_t *derived_int8(const std::string &key, const std::function<std::vector<int8_t>()> &make);

  // Drops the resident pages of the mapped file (the kernel re-reads any page
  // touched again). Called once the weights a plan needs are packed, so the
  // process does not hold the file and the packed copy at the same time.
  void release_file_pages() const;

  const weights::ModelFile &file() const { return file_; }

 private:
  // The tensor `name`, checked to exist with exactly `shape`.
  const weights::TensorView &checked(const std::string &name, const std::vector<int64_t> &shape) const;
  // Marks `name` used, and its input scale when `name` is a weight (derived_mutex_ held).
  void mark_used(const std::string &name);

  weights::ModelFile file_;
  std::set<std::string> used_;
  std::mutex derived_mutex_; // guards used_ and derived_
  std::map<std::string, std::vector<float>> derived_;
  std::map<std::string, std::vector<int8_t>> derived_int8_;
};

} // namespace pola
