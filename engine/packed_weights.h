// Weights in the layouts oneDNN's primitives prefer, reordered once per
// (tensor, layout) and shared by every plan of a model, so no inference call
// ever repacks weights and a second batch size costs no second copy.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <dnnl.hpp>

namespace pola {

class PackedWeightCache {
 public:
  // `user` points at weights laid out (and typed: f32 or bf16) as `user_md`;
  // returns them as `want` (the same memory, without a copy, when the
  // layouts agree; a conversion to bf16 rounds to nearest even).
  dnnl::memory get(const void *user, const dnnl::memory::desc &user_md, const dnnl::memory::desc &want);
  size_t packed_bytes() const { return bytes_; }

 private:
  std::mutex mutex_;
  std::map<std::pair<const void *, std::string>, dnnl::memory> packed_;
  size_t bytes_ = 0;
};

} // namespace pola
