#include "engine/weight_store.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "model/tensor_list.h"
#include "weights/error.h"
#include "weights/int8_weights.h"

namespace pola {

const weights::TensorView &WeightStore::checked(const std::string &name, const std::vector<int64_t> &shape) const {
  const weights::TensorView *t = file_.find(name);
  if (!t) throw InputError(file_.path() + ": missing tensor '" + name + "' (expected shape " +
                           shape_string(shape) + ")");
  if (t->shape != shape)
    throw InputError(file_.path() + ": tensor '" + name + "' has shape " + shape_string(t->shape) +
                     ", the config implies " + shape_string(shape));
  return *t;
}

void WeightStore::mark_used(const std::string &name) {
  used_.insert(name);
  // A float run of an int8 file never reads the activation scales.
  const std::string in = weights::input_scale_name(name);
  if (!in.empty() && file_.find(in)) used_.insert(in);
}

const float *WeightStore::get(const std::string &name, const std::vector<int64_t> &shape) {
  const weights::TensorView *t = &checked(name, shape);
  std::lock_guard<std::mutex> lock(derived_mutex_);
  mark_used(name);
  if (t->dtype == weights::StoredDtype::f32) return t->data;
  const bool i8 = t->dtype == weights::StoredDtype::i8;
  const std::string scale_name = weights::int8_scale_name(name);
  if (i8) used_.insert(scale_name);
  // Stored narrower: widened (or dequantized) once, kept with the model.
  auto it = derived_.find(name + ":f32");
  if (it != derived_.end()) return it->second.data();
  if (i8) {
    // ModelFile::open has checked that the scales exist, fit and are > 0.
    const float *scale = file_.find(scale_name)->data;
    it = derived_.emplace(name + ":f32", weights::dequantize_int8(static_cast<const int8_t *>(t->bytes), t->shape, scale))
             .first;
  } else {
    it = derived_.emplace(name + ":f32", weights::tensor_as_f32(*t)).first;
  }
  return it->second.data();
}

StoredWeight WeightStore::get_stored(const std::string &name, const std::vector<int64_t> &shape) {
  const weights::TensorView *t = file_.find(name);
  if (t && t->shape == shape && t->dtype == weights::StoredDtype::bf16) {
    std::lock_guard<std::mutex> lock(derived_mutex_);
    mark_used(name);
    return {t->bytes, t->dtype};
  }
  // F32 as stored; I8 dequantized (no caller of get_stored multiplies int8).
  return {get(name, shape), weights::StoredDtype::f32};  // checks presence and shape
}

bool WeightStore::stored_int8(const std::string &name) const {
  const weights::TensorView *t = file_.find(name);
  return t && t->dtype == weights::StoredDtype::i8;
}

QuantizedWeight WeightStore::get_int8(const std::string &name, const std::vector<int64_t> &shape) {
  const weights::TensorView &t = checked(name, shape);
  if (t.dtype != weights::StoredDtype::i8)
    throw InputError(file_.path() + ": tensor '" + name + "' is stored as " + weights::stored_dtype_name(t.dtype) +
                     ", not I8 (int8 weights come from `pola quantize`)");
  const std::string scale_name = weights::int8_scale_name(name);
  const weights::TensorView *s = file_.find(scale_name);  // present and valid: ModelFile::open checked
  std::lock_guard<std::mutex> lock(derived_mutex_);
  mark_used(name);
  used_.insert(scale_name);
  return {static_cast<const int8_t *>(t.bytes), s->data};
}

const float *WeightStore::input_scale(const std::string &weight_name) {
  const std::string name = weights::input_scale_name(weight_name);
  if (name.empty()) throw std::invalid_argument("WeightStore::input_scale: '" + weight_name + "' is not a .weight tensor");
  const weights::TensorView *t = file_.find(name);
  if (!t) return nullptr;
  if (t->dtype != weights::StoredDtype::f32 || t->shape != std::vector<int64_t>{1})
    throw InputError(file_.path() + ": tensor '" + name + "' is " + weights::stored_dtype_name(t->dtype) + " of shape " +
                     shape_string(t->shape) + "; an activation scale is one F32 number, shape (1)");
  // A zero or negative scale would make every quantized activation 0 or flip
  // its sign. (ModelFile::open already refuses non-finite F32 data.)
  const float v = t->data[0];
  if (!(std::isfinite(v) && v > 0.0f)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
    throw InputError(file_.path() + ": tensor '" + name + "' is " + text + "; an activation scale must be finite and > 0");
  }
  std::lock_guard<std::mutex> lock(derived_mutex_);
  used_.insert(name);
  return t->data;
}

void WeightStore::ignore(const std::string &name) {
  std::lock_guard<std::mutex> lock(derived_mutex_);
  if (file_.find(name)) used_.insert(name);
}

void WeightStore::check_all_used() const {
  std::string extra;
  size_t count = 0;
  for (const auto &t : file_.tensors()) {
    if (used_.count(t.name)) continue;
    if (count < 8) extra += (count ? ", " : "") + t.name;
    ++count;
  }
  if (count)
    throw InputError(file_.path() + ": " + std::to_string(count) +
                     " unexpected tensor(s) for this config: " + extra + (count > 8 ? ", ..." : ""));
}

const float *WeightStore::derived(const std::string &key,
                                  const std::function<std::vector<float>()> &make) {
  std::lock_guard<std::mutex> lock(derived_mutex_);
  auto it = derived_.find(key);
  if (it == derived_.end()) it = derived_.emplace(key, make()).first;
  return it->second.data();
}

const int8_t *WeightStore::derived_int8(const std::string &key, const std::function<std::vector<int8_t>()> &make) {
  std::lock_guard<std::mutex> lock(derived_mutex_);
  auto it = derived_int8_.find(key);
  if (it == derived_int8_.end()) it = derived_int8_.emplace(key, make()).first;
  return it->second.data();
}

} // namespace pola

namespace pola {

void WeightStore::release_file_pages() const {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (const auto &t : file_.tensors()) {
    if (t.numel == 0) continue;
    auto b = reinterpret_cast<uintptr_t>(t.bytes);
    lo = std::min(lo, b);
    hi = std::max(hi, b + static_cast<uintptr_t>(t.byte_size()));
  }
  if (hi <= lo) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  lo = lo / page * page;
  // Advice only: a failure leaves the pages resident, which is harmless.
  (void)madvise(reinterpret_cast<void *>(lo), hi - lo, MADV_DONTNEED);
}

} // namespace pola
