#include "weights/int8_weights.h"

#include <cmath>
#include <cstdio>

#include "model/tensor_list.h"

namespace pola::weights {
namespace {

const std::string kWeightSuffix = ".weight";

std::string number_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

} // namespace

std::string int8_scale_name(const std::string &tensor) { return tensor + "_scale"; }

std::string input_scale_name(const std::string &weight_name) {
  const size_t n = kWeightSuffix.size();
  if (weight_name.size() <= n || weight_name.compare(weight_name.size() - n, n, kWeightSuffix) != 0) return "";
  return weight_name.substr(0, weight_name.size() - n) + ".input_scale";
}

std::string int8_scale_problem(const std::string &name, const std::vector<int64_t> &shape, const Int8Scale *scale) {
  // The scales are per row of the (out, in, ...) weight: without a first
  // dimension there is no row to scale.
  if (shape.empty())
    return "I8 tensor '" + name + "' has rank 0; an int8 weight needs an output-channel dimension for its scales";
  const std::string scale_name = int8_scale_name(name);
  const std::vector<int64_t> want = {shape[0]};
  if (!scale)
    return "I8 tensor '" + name + "' has no scale tensor '" + scale_name + "' (F32, shape " + shape_string(want) +
           ": one scale per output channel)";
  const std::string which = "tensor '" + scale_name + "', the scales of I8 tensor '" + name + "',";
  if (scale->dtype != StoredDtype::f32)
    return which + " is " + stored_dtype_name(scale->dtype) + "; scales must be F32";
  if (scale->shape != want)
    return which + " has shape " + shape_string(scale->shape) + ", expected " + shape_string(want) +
           " (one scale per output channel)";
  for (int64_t r = 0; r < shape[0]; ++r) {
    const float s = scale->data[r];
    // A zero or negative scale flips or erases the weight; NaN or Inf poisons every output.
    if (!(std::isfinite(s) && s > 0.0f))
      return which + " holds " + number_text(s) + " at index " + std::to_string(r) + "; scales must be finite and > 0";
  }
  return "";
}

std::vector<float> dequantize_int8(const int8_t *q, const std::vector<int64_t> &shape, const float *scale) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::vector<float> out(static_cast<size_t>(numel));
  if (numel == 0) return out; // also keeps the row length below from dividing by zero
  const int64_t row_size = numel / shape[0];
  for (int64_t r = 0; r < shape[0]; ++r) {
    const float s = scale[r];
    const int8_t *src = q + r * row_size;
    float *dst = out.data() + r * row_size;
    for (int64_t i = 0; i < row_size; ++i) dst[i] = static_cast<float>(src[i]) * s;
  }
  return out;
}

} // namespace pola::weights
