// Weights in the layouts oneDNN's primitives (or the AMX GEMM) prefer, reordered once per
// (tensor, layout) and shared by every plan of a model, so no inference call
// ever repacks weights and a second batch size costs no second copy.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <dnnl.hpp>

#include "kernels/gemm_bf16.h"
#include "kernels/gemm_f32.h"

namespace pola {

class PackedWeightCache {
 public:
  // `user` points at weights laid out (and typed: f32 or bf16) as `user_md`;
  // returns them as `want` (the same memory, without a copy, when the
  // layouts agree; a conversion to bf16 rounds to nearest even).
  dnnl::memory get(const void *user, const dnnl::memory::desc &user_md, const dnnl::memory::desc &want);
  // `user` (PyTorch (out, in) row-major, float or bf16 bits) pre-tiled for the
  // AMX bf16 GEMM (kernels/gemm_bf16.h), 64-byte aligned, packed once.
  const uint16_t *gemm_bf16_tiles(const void *user, bool user_bf16, const kernels::Bf16GemmLayout &layout);
  // The own fp32 GEMM's weight layout (kernels/gemm_f32.h) for a (k in, n
  // out) layer: the plain (out, in) form read in place in low-memory mode when
  // the file stores it as float, else panels `panel_width` wide.
  kernels::F32GemmLayout gemm_f32_layout(int64_t k, int64_t n, int64_t panel_width, bool user_bf16) const;
  // `user` (PyTorch (out, in) row-major, float or bf16 bits) as `layout`
  // wants it: `user` itself for the plain layout, else packed into panels,
  // 64-byte aligned, once per (tensor, panel width).
  const float *gemm_f32_weights(const void *user, bool user_bf16, const kernels::F32GemmLayout &layout);
  size_t packed_bytes() const { return bytes_; }
  // Low-memory mode: a GEMM or convolution is asked to read its weights as the
  // file stores them (`user`) instead of in the layout it prefers (`any`), so
  // no second copy exists; only where the dtypes agree (fp32 from an F32 file).
  void set_plain_only(bool on) { plain_only_ = on; }
  bool plain_only() const { return plain_only_; }
  dnnl::memory::desc weights_layout(const dnnl::memory::desc &user, const dnnl::memory::desc &any) const {
    return plain_only_ && user.data.data_type == any.data.data_type ? user : any;
  }

 private:
  struct FreeDeleter {
    void operator()(uint16_t *p) const;
    void operator()(float *p) const;
  };
  std::map<const void *, std::unique_ptr<uint16_t[], FreeDeleter>> tiles_;
  std::map<std::pair<const void *, int64_t>, std::unique_ptr<float[], FreeDeleter>> panels_;
  std::mutex mutex_;
  std::map<std::pair<const void *, std::string>, dnnl::memory> packed_;
  size_t bytes_ = 0;
  bool plain_only_ = false;
};

} // namespace pola
