// The model builders' view of a model file: tensors fetched by name with the
// shape the config implies (a mismatch is an InputError naming the file, the
// tensor and both shapes), bookkeeping of which tensors were used so that
// unexpected ones are refused, and storage for tensors derived at load time.
#pragma once

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

class WeightStore {
 public:
  explicit WeightStore(weights::ModelFile file) : file_(std::move(file)) {}

  // The tensor `name`, which must exist with exactly `shape`, as float32 (a
  // BF16 tensor is widened once and kept with the model).
  const float *get(const std::string &name, const std::vector<int64_t> &shape);
  // The same tensor as stored, without widening.
  StoredWeight get_stored(const std::string &name, const std::vector<int64_t> &shape);
  // Marks a tensor as known but unused (e.g. PVT's final norm, stored buffers).
  void ignore(const std::string &name);
  // Throws if the file holds tensors no builder asked for.
  void check_all_used() const;

  // A tensor derived at load from stored ones (transformed weights), made
  // once under `key` and kept alive with the model. Thread-safe.
  const float *derived(const std::string &key, const std::function<std::vector<float>()> &make);

  // Drops the resident pages of the mapped file (the kernel re-reads any page
  // touched again). Called once the weights a plan needs are packed, so the
  // process does not hold the file and the packed copy at the same time.
  void release_file_pages() const;

  const weights::ModelFile &file() const { return file_; }

 private:
  weights::ModelFile file_;
  std::set<std::string> used_;
  std::mutex derived_mutex_; // guards used_ and derived_
  std::map<std::string, std::vector<float>> derived_;
};

} // namespace pola
