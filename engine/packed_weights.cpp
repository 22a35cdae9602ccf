#include "engine/packed_weights.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

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

void PackedWeightCache::FreeDeleter::operator()(uint16_t *p) const { std::free(p); }
void PackedWeightCache::FreeDeleter::operator()(float *p) const { std::free(p); }

const uint16_t *PackedWeightCache::gemm_bf16_tiles(const void *user, bool user_bf16,
                                                   const kernels::Bf16GemmLayout &layout) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = tiles_.find(user);
  if (it != tiles_.end()) return it->second.get();
  const size_t bytes = (static_cast<size_t>(layout.packed_elems()) * sizeof(uint16_t) + 63) / 64 * 64;
  auto *mem = static_cast<uint16_t *>(std::aligned_alloc(64, bytes));
  if (!mem) throw std::bad_alloc();
  std::unique_ptr<uint16_t[], FreeDeleter> owned(mem);
  kernels::pack_gemm_bf16_weights(user, user_bf16, layout, mem);
  bytes_ += bytes;
  return tiles_.emplace(user, std::move(owned)).first->second.get();
}

kernels::F32GemmLayout PackedWeightCache::gemm_f32_layout(int64_t k, int64_t n, int64_t panel_width,
                                                          bool user_bf16) const {
  if (plain_only_ && !user_bf16) return kernels::F32GemmLayout::plain_weights(k, n);
  return kernels::F32GemmLayout(k, n, panel_width);
}

const float *PackedWeightCache::gemm_f32_weights(const void *user, bool user_bf16,
                                                 const kernels::F32GemmLayout &layout) {
  if (layout.plain()) {
    if (user_bf16) throw std::invalid_argument("gemm_f32: the plain layout reads float weights, not bf16");
    return static_cast<const float *>(user);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const auto key = std::make_pair(user, layout.nr);
  auto it = panels_.find(key);
  if (it != panels_.end()) return it->second.get();
  const size_t bytes = (static_cast<size_t>(layout.packed_elems()) * sizeof(float) + 63) / 64 * 64;
  auto *mem = static_cast<float *>(std::aligned_alloc(64, bytes));
  if (!mem) throw std::bad_alloc();
  std::unique_ptr<float[], FreeDeleter> owned(mem);
  kernels::pack_gemm_f32_weights(user, user_bf16, layout, mem);
  bytes_ += bytes;
  return panels_.emplace(key, std::move(owned)).first->second.get();
}

} // namespace pola
