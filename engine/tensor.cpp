#include "engine/tensor.h"

#include <cstring>

namespace pola {

float TensorView::value(int64_t r, int64_t c) const {
  const size_t i = static_cast<size_t>(r * ld() + c);
  switch (dtype()) {
  case DType::f32: return static_cast<const float *>(data())[i];
  case DType::bf16: {
    const uint32_t bits = uint32_t(static_cast<const uint16_t *>(data())[i]) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  case DType::s8: return (static_cast<const int8_t *>(data())[i] - tensor().quant.zero_point) * tensor().quant.scale;
  case DType::u8: return (static_cast<const uint8_t *>(data())[i] - tensor().quant.zero_point) * tensor().quant.scale;
  }
  return 0.0f;
}

} // namespace pola
