// Exactness: y = BN(conv(x)) = s * (W x + b - mean) + beta per output channel,
// which is the conv W' x + b' with W' = s W and b' = s (b - mean) + beta. This
// is exact up to float rounding as long as nothing sits between the conv and
// its BN (no activation, no padding with a non-zero value, no residual). Every
// BN the tensor lists mark Folded (PolaFormer++: stem, downsampling, head
// projection) directly follows its conv, so every fold here is exact; the
// scale and shift are computed in double and rounded once to float32.
#include "weights/batchnorm_fold.h"

#include <cmath>
#include <stdexcept>

#include "weights/error.h"
#include "weights/finite_check.h"

namespace pola::weights {
namespace {

// "norm.running_var" -> "norm"
std::string prefix_of(const std::string &name) { return name.substr(0, name.rfind('.')); }

std::vector<float> &entry(std::map<std::string, std::vector<float>> &tensors, const std::string &name, size_t size) {
  auto it = tensors.find(name);
  // The converter checks the checkpoint against the specs before folding, so
  // a missing or mis-sized entry here is a bug, not a bad file.
  if (it == tensors.end() || it->second.size() != size)
    throw std::logic_error("batchnorm fold: '" + name + "' is missing or has the wrong size");
  return it->second;
}

void refuse_nonfinite(const std::vector<float> &v, const std::string &file, const std::string &name,
                      const std::string &bn) {
  const NonFinite bad = find_nonfinite(v.data(), v.size());
  if (bad.count)
    fail_in_file(file, "folding the BatchNorm '" + bn + "' into '" + name + "' gives " +
                           describe_nonfinite(bad, v.data()) + " (a running_var far below its weight?)");
}

void fold_one(std::map<std::string, std::vector<float>> &tensors, const std::string &bn, const std::string &conv,
              size_t channels, const std::string &file) {
  const std::vector<float> &gamma = entry(tensors, bn + ".weight", channels);
  const std::vector<float> &beta = entry(tensors, bn + ".bias", channels);
  const std::vector<float> &mean = entry(tensors, bn + ".running_mean", channels);
  const std::vector<float> &var = entry(tensors, bn + ".running_var", channels);
  std::vector<float> &w = tensors.at(conv + ".weight");
  std::vector<float> &b = entry(tensors, conv + ".bias", channels);
  if (w.size() % channels != 0) throw std::logic_error("batchnorm fold: '" + conv + ".weight' is not per channel");
  const size_t per_channel = w.size() / channels; // (out, in, kh, kw): each output channel is contiguous
  for (size_t c = 0; c < channels; ++c) {
    // A variance is never negative; sqrt of one below -eps would be NaN, and
    // one in (-eps, 0) would be a silently wrong scale.
    if (var[c] < 0.0f)
      fail_in_file(file, "tensor '" + bn + ".running_var' holds a negative variance (" + std::to_string(var[c]) +
                             " at index " + std::to_string(c) + "); a BatchNorm's running variance is never negative");
    const double s = static_cast<double>(gamma[c]) / std::sqrt(static_cast<double>(var[c]) + kBatchNormEps);
    for (size_t i = c * per_channel; i < (c + 1) * per_channel; ++i) w[i] = static_cast<float>(w[i] * s);
    b[c] = static_cast<float>((static_cast<double>(b[c]) - mean[c]) * s + beta[c]);
  }
  refuse_nonfinite(w, file, conv + ".weight", bn);
  refuse_nonfinite(b, file, conv + ".bias", bn);
}

} // namespace

size_t fold_batch_norms(const std::vector<TensorSpec> &specs, std::map<std::string, std::vector<float>> &tensors,
                        const std::string &file) {
  size_t folded = 0;
  for (const TensorSpec &spec : specs) {
    // One BN per group of Folded entries; its ".weight" entry starts the fold.
    if (spec.use != TensorSpec::Use::Folded || prefix_of(spec.name) + ".weight" != spec.name) continue;
    if (!tensors.count(spec.name)) continue; // a model file: already folded
    const std::string bn = prefix_of(spec.name);
    if (spec.shape.size() != 1) throw std::logic_error("batchnorm fold: '" + spec.name + "' is not a vector");
    fold_one(tensors, bn, spec.fold_into, static_cast<size_t>(spec.shape[0]), file);
    for (const char *e : {".weight", ".bias", ".running_mean", ".running_var"}) tensors.erase(bn + e);
    ++folded;
  }
  return folded;
}

} // namespace pola::weights
