#include "engine/packed_weights.h"

#include <cstring>

#include "engine/dnnl_context.h"

namespace pola {
namespace {
// A memory descriptor's identity: its C struct, byte for byte.
std::string desc_key(const dnnl::memory::desc &md) {
  return std::string(reinterpret_cast<const char *>(&md.data), sizeof(md.data));
}
} // namespace

dnnl::memory PackedWeightCache::get(const void *user, const dnnl::memory::desc &user_md,
                                    const dnnl::memory::desc &want) {
  auto &eng = cpu_engine();
  dnnl::memory src(user_md, eng, const_cast<void *>(user));
  if (want == user_md) return src;
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_pair(user, desc_key(want));
  auto it = packed_.find(key);
  if (it != packed_.end()) return it->second;
  dnnl::memory dst(want, eng);
  dnnl::stream st(eng);
  dnnl::reorder(src, dst).execute(st, src, dst);
  st.wait();
  bytes_ += want.get_size();
  packed_.emplace(key, dst);
  return dst;
}

} // namespace pola
