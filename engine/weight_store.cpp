#include "engine/weight_store.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "model/tensor_list.h"
#include "weights/error.h"

namespace pola {

const float *WeightStore::get(const std::string &name, const std::vector<int64_t> &shape) {
  const weights::TensorView *t = file_.find(name);
  if (!t) throw InputError(file_.path() + ": missing tensor '" + name + "' (expected shape " +
                           shape_string(shape) + ")");
  if (t->shape != shape)
    throw InputError(file_.path() + ": tensor '" + name + "' has shape " + shape_string(t->shape) +
                     ", the config implies " + shape_string(shape));
  std::lock_guard<std::mutex> lock(derived_mutex_);
  used_.insert(name);
  if (t->dtype == weights::StoredDtype::f32) return t->data;
  // Stored narrower: widened once, kept with the model.
  auto it = derived_.find(name + ":f32");
  if (it == derived_.end()) it = derived_.emplace(name + ":f32", weights::tensor_as_f32(*t)).first;
  return it->second.data();
}

StoredWeight WeightStore::get_stored(const std::string &name, const std::vector<int64_t> &shape) {
  const weights::TensorView *t = file_.find(name);
  if (t && t->shape == shape && t->dtype != weights::StoredDtype::f32) {
    std::lock_guard<std::mutex> lock(derived_mutex_);
    used_.insert(name);
    return {t->bytes, t->dtype};
  }
  return {get(name, shape), weights::StoredDtype::f32};  // checks presence and shape
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
