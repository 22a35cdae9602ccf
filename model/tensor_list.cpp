// The tensor list: the family gives the layout, the building blocks every
// family shares are written once here.
#include "model/tensor_list.h"

#include "model/family.h"

namespace pola {
namespace model_detail {

void TensorListWriter::add(std::string name, std::vector<int64_t> shape, TensorSpec::Use use) {
  out_.push_back({std::move(name), std::move(shape), use});
}

void TensorListWriter::linear(const std::string &prefix, int64_t out, int64_t in, bool bias) {
  add(prefix + ".weight", {out, in});
  if (bias) add(prefix + ".bias", {out});
}

void TensorListWriter::norm(const std::string &prefix, int64_t dim) {
  add(prefix + ".weight", {dim});
  add(prefix + ".bias", {dim});
}

void TensorListWriter::polarity_attention(const std::string &prefix, int64_t dim, int64_t heads, int64_t kernel,
                                          int64_t pos_enc_rows) {
  const int64_t d = dim / heads;
  linear(prefix + ".proj", dim, dim);
  add(prefix + ".dwc.weight", {d, 1, kernel, kernel}); // one depthwise conv shared by all heads
  add(prefix + ".dwc.bias", {d});
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
