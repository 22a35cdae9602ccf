// BatchNorm folding driven by the tensor list (weights/batchnorm_fold.h) and
// the tensor check's two modes: a checkpoint must hold the Folded entries, a
// model file must not.
#include <doctest/doctest.h>

#include <cmath>

#include "model/presets.h"
#include "model/tensor_list.h"
#include "weights/batchnorm_fold.h"
#include "weights/error.h"
#include "weights/tensor_check.h"

using namespace pola;
using namespace pola::weights;

namespace {

// A conv (2 out, 1 in, 1x1) followed by a BN, as a family's tensor list marks it.
std::vector<TensorSpec> conv_bn_specs() {
  std::vector<TensorSpec> s(6);
  s[0].name = "c.weight", s[0].shape = {2, 1, 1, 1};
  s[1].name = "c.bias", s[1].shape = {2};
  const char *bn[] = {"n.weight", "n.bias", "n.running_mean", "n.running_var"};
  for (int i = 0; i < 4; ++i) {
    s[2 + i].name = bn[i];
    s[2 + i].shape = {2};
    s[2 + i].use = TensorSpec::Use::Folded;
    s[2 + i].fold_into = "c";
  }
  return s;
}

std::map<std::string, std::vector<float>> conv_bn_tensors(float var1) {
  return {{"c.weight", {2.0f, -1.0f}}, {"c.bias", {0.5f, 1.0f}},        {"n.weight", {3.0f, 0.5f}},
          {"n.bias", {0.25f, -2.0f}},  {"n.running_mean", {1.0f, -1.0f}}, {"n.running_var", {4.0f, var1}}};
}

} // namespace

TEST_CASE("a BatchNorm folds into the conv before it, and its entries leave the list") {
  auto t = conv_bn_tensors(0.25f);
  CHECK(fold_batch_norms(conv_bn_specs(), t, "ck.pth") == 1);
  CHECK(t.size() == 2); // only c.weight and c.bias remain
  for (int c = 0; c < 2; ++c) {
    const double w[] = {2.0, -1.0}, b[] = {0.5, 1.0}, g[] = {3.0, 0.5}, beta[] = {0.25, -2.0}, m[] = {1.0, -1.0},
                 v[] = {4.0, 0.25};
    const double s = g[c] / std::sqrt(v[c] + 1e-5);
    CHECK(t["c.weight"][c] == static_cast<float>(w[c] * s));
    CHECK(t["c.bias"][c] == static_cast<float>((b[c] - m[c]) * s + beta[c]));
  }
  // A model file's tensors (already folded) are left alone.
  auto again = t;
  CHECK(fold_batch_norms(conv_bn_specs(), again, "m.pola") == 0);
  CHECK(again == t);
}

TEST_CASE("a negative running_var is refused, naming the file and the tensor") {
  auto t = conv_bn_tensors(-0.5f);
  CHECK_THROWS_WITH_AS(fold_batch_norms(conv_bn_specs(), t, "ck.pth"),
                       doctest::Contains("ck.pth: tensor 'n.running_var' holds a negative variance"), InputError);
}

TEST_CASE("PolaFormer++ BatchNorms: required in checkpoints, refused in model files") {
  const auto specs = expected_tensors(*find_preset("pola_pp_b0"));
  ShapeMap checkpoint, model_file;
  for (const auto &s : specs) {
    checkpoint[s.name] = s.shape;
    const bool kept = s.use != TensorSpec::Use::Dropped && s.use != TensorSpec::Use::Folded;
    if (kept) model_file[s.name] = s.shape;
    if (s.use == TensorSpec::Use::Folded) CHECK(!s.fold_into.empty());
  }
  CHECK(check_tensors(checkpoint, specs, /*checkpoint=*/true).ok());
  CHECK(check_tensors(model_file, specs, /*checkpoint=*/false).ok());
  // A checkpoint without a BN cannot be folded; a model file with one is not a folded file.
  ShapeMap no_bn = checkpoint;
  no_bn.erase("norm.running_var");
  CHECK(check_tensors(no_bn, specs, true).missing.size() == 1);
  ShapeMap with_bn = model_file;
  with_bn["norm.running_var"] = {2048};
  CHECK(check_tensors(with_bn, specs, false).extra.size() == 1);
  // 8 BatchNorms x 4 folded entries; depthwise kernels are marked.
  size_t folded = 0, depthwise = 0;
  for (const auto &s : specs) {
    folded += s.use == TensorSpec::Use::Folded;
    depthwise += s.depthwise;
  }
  CHECK(folded == 32);
  CHECK(depthwise == 3 * 8); // pos, attn.lepe, ffn.dwconv in each of b0's 8 blocks
}
