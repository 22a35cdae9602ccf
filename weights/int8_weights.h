// Int8 weights in a model file (weights/FORMAT.md, "I8 tensors"): the names
// of the tensors that travel with an I8 tensor, the rule its scales must
// follow, and dequantization. Shared by the reader, the writer, the tensor
// checklist and the engine's WeightStore, so they cannot disagree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weights/model_file.h"

namespace pola::weights {

// `tensor` + "_scale": the F32 per-output-channel scales of the I8 tensor `tensor`.
std::string int8_scale_name(const std::string &tensor);

// "<prefix>.input_scale" for a weight "<prefix>.weight" (the static scale of
// the activations that weight multiplies); "" for a name not ending in ".weight".
std::string input_scale_name(const std::string &weight_name);

// The scale tensor of an I8 tensor as found in (or about to be written to) a file.
struct Int8Scale {
  std::vector<int64_t> shape;
  StoredDtype dtype = StoredDtype::f32;
  const float *data = nullptr; // shape[0] values when dtype is F32
};

// Why the I8 tensor `name` of `shape` cannot be used with `scale` (null when
// the file has no `name`_scale), or "" when it can: the tensor has rank >= 1,
// its scale is F32 of shape {shape[0]}, every value finite and > 0. The text
// names both tensors; callers prefix the file.
std::string int8_scale_problem(const std::string &name, const std::vector<int64_t> &shape, const Int8Scale *scale);

// w = q * scale[row] in float32, row = index / (numel / shape[0]): one scale
// per output channel of the (out, in, ...) weight. `shape` has rank >= 1.
std::vector<float> dequantize_int8(const int8_t *q, const std::vector<int64_t> &shape, const float *scale);

} // namespace pola::weights
