// Folding eval-mode BatchNorms into the convolutions before them, at convert
// time, driven by the tensor list (TensorSpec::Use::Folded): no family is named
// here, and a model file holds only the folded convolutions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/tensor_list.h"

namespace pola::weights {

// The eps of every BatchNorm2d the tensor lists describe: PyTorch's default,
// which the PolaFormer++ authors never change (SPEC-polaformerpp T6).
constexpr double kBatchNormEps = 1e-5;

// For every BatchNorm whose entries `specs` mark Folded, with y = conv(x):
//   s  = bn.weight / sqrt(bn.running_var + eps)          (double)
//   W' = W * s[out channel],  b' = (b - bn.running_mean) * s + bn.bias
// stored back as float32 in `tensors` under the conv's names; the BN's entries
// are removed from `tensors`. `tensors` holds every non-Dropped tensor read
// from the checkpoint `file` (float32, row-major). Throws InputError naming
// `file` and the tensor for a negative running_var or a non-finite result.
// Returns how many BatchNorms were folded (0 when none is present, e.g. for a
// model file, whose BatchNorms are already folded).
size_t fold_batch_norms(const std::vector<TensorSpec> &specs, std::map<std::string, std::vector<float>> &tensors,
                        const std::string &file);

} // namespace pola::weights
