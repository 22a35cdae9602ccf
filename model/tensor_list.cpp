// The tensor list: the family gives the layout, the building blocks every
// family shares are written once here.
#include "model/tensor_list.h"

#include "model/family.h"

namespace pola {
namespace model_detail {

void TensorListWriter::add(std::string name, std::vector<int64_t> shape, TensorSpec::Use use) {
  TensorSpec spec;
  spec.name = std::move(name);
  spec.shape = std::move(shape);
  spec.use = use;
  out_.push_back(std::move(spec));
}

void TensorListWriter::linear(const std::string &prefix, int64_t out, int64_t in, bool bias) {
  add(prefix + ".weight", {out, in});
  if (bias) add(prefix + ".bias", {out});
}

void TensorListWriter::norm(const std::string &prefix, int64_t dim) {
  add(prefix + ".weight", {dim});
  add(prefix + ".bias", {dim});
}

void TensorListWriter::conv(const std::string &prefix, int64_t out, int64_t in_per_group, int64_t k, bool depthwise) {
  add(prefix + ".weight", {out, in_per_group, k, k});
  out_.back().depthwise = depthwise;
  add(prefix + ".bias", {out});
}

void TensorListWriter::folded_batch_norm(const std::string &prefix, int64_t dim, const std::string &conv_prefix) {
  for (const char *entry : {".weight", ".bias", ".running_mean", ".running_var"}) {
    add(prefix + entry, {dim}, TensorSpec::Use::Folded);
    out_.back().fold_into = conv_prefix;
  }
  add(prefix + ".num_batches_tracked", {}, TensorSpec::Use::Dropped);
}

void TensorListWriter::polarity_attention(const std::string &prefix, int64_t dim, int64_t heads, int64_t kernel,
                                          int64_t pos_enc_rows) {
  const int64_t d = dim / heads;
  linear(prefix + ".proj", dim, dim);
  conv(prefix + ".dwc", d, 1, kernel, /*depthwise=*/true); // one depthwise conv shared by all heads
  add(prefix + ".power", {1, heads, 1, d});
  add(prefix + ".scale", {1, 1, dim});
  add(prefix + ".positional_encoding", {1, pos_enc_rows, dim});
}

void TensorListWriter::mlp(const std::string &prefix, int64_t dim, int64_t hidden) {
  linear(prefix + ".fc1", hidden, dim);
  linear(prefix + ".fc2", dim, hidden);
}

} // namespace model_detail

std::vector<TensorSpec> expected_tensors(const ModelConfig &c) {
  check_config(c, "config");
  std::vector<TensorSpec> specs;
  model_detail::TensorListWriter out(specs);
  model_detail::family_rules(c.family).tensors(c, model_geometry(c), out);
  return specs;
}

std::string shape_string(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

} // namespace pola
