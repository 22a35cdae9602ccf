// What one element of an array is: the key of the kernel registry
// (kernels/registry.h) and the type of every graph tensor (engine/tensor.h).
// s8/u8 are quantized values whose scale and zero point travel beside them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pola {

enum class DType : uint8_t { f32, bf16, s8, u8 };

inline size_t dtype_bytes(DType t) { return t == DType::f32 ? 4 : t == DType::bf16 ? 2 : 1; }
inline const char *dtype_name(DType t) {
  switch (t) {
  case DType::f32: return "f32";
  case DType::bf16: return "bf16";
  case DType::s8: return "s8";
  case DType::u8: return "u8";
  }
  return "unknown";
}

} // namespace pola
