#include "weights/int8_quantize.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "weights/error.h"

namespace pola::weights {

Int8Rows quantize_rows(const float *w, int64_t rows, int64_t cols) {
  Int8Rows out;
  out.q.resize(size_t(rows * cols));
  out.scale.resize(size_t(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = w + r * cols;
    float m = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, std::fabs(row[c]));
    const float s = m > 0 ? m / 127.f : 1.f;
    out.scale[size_t(r)] = s;
    for (int64_t c = 0; c < cols; ++c) {
      const float q = std::nearbyint(row[c] / s); // ties to even (the default rounding mode)
      out.q[size_t(r * cols + c)] = static_cast<int8_t>(std::clamp(q, -127.f, 127.f));
    }
  }
  return out;
}

float input_scale_for(float max_abs) { return max_abs > 0 ? max_abs / 127.f : 1.f; }

void write_int8_model(const ModelFile &in, const std::map<std::string, float> &input_max_abs,
                      const QuantizeRecord &record, const std::string &out_path) {
  for (const TensorView &t : in.tensors())
    if (t.dtype == StoredDtype::i8)
      throw InputError(in.path() + ": already quantized (" + t.name + " is int8); quantize the float model");
  // Owned storage for what is written: the widened float tensors and the int8 layers.
  std::vector<std::vector<float>> floats;
  std::vector<Int8Rows> layers;
  floats.reserve(in.tensors().size() + 2 * input_max_abs.size());
  layers.reserve(input_max_abs.size());
  std::vector<TensorToWrite> out;
  std::map<std::string, const TensorView *> weights;
  for (const auto &[prefix, max_abs] : input_max_abs) {
    const TensorView *w = in.find(prefix + ".weight");
    if (!w || w->shape.size() < 2)
      throw InputError(in.path() + ": no weight matrix " + prefix + ".weight to quantize");
    weights[w->name] = w;
  }
  for (const TensorView &t : in.tensors()) {
    floats.push_back(tensor_as_f32(t));
    const auto it = weights.find(t.name);
    if (it == weights.end()) {
      out.push_back({t.name, t.shape, floats.back().data(), t.dtype});
      continue;
    }
    const std::string prefix = t.name.substr(0, t.name.size() - std::string(".weight").size());
    const int64_t rows = t.shape[0], cols = t.numel / rows;
    layers.push_back(quantize_rows(floats.back().data(), rows, cols));
    TensorToWrite q{t.name, t.shape, nullptr, StoredDtype::i8};
    q.i8 = layers.back().q.data();
    out.push_back(q);
    out.push_back({t.name + "_scale", {rows}, layers.back().scale.data(), StoredDtype::f32});
    floats.push_back({input_scale_for(input_max_abs.at(prefix))});
    out.push_back({prefix + ".input_scale", {1}, floats.back().data(), StoredDtype::f32});
  }
  std::map<std::string, std::string> metadata = in.metadata();
  metadata.erase("checksum_algorithm");
  metadata.erase("tensor_checksums");
  metadata.erase("header_checksum");
  nlohmann::json quantization{
      {"weights", "int8 symmetric, per output channel"},
      {"activations", "int8 symmetric, per tensor, static (max |x| over the calibration images / 127)"},
      {"layers", int64_t(input_max_abs.size())},
      {"calibration", record.calibration},
      {"images", record.images}};
  if (!record.kept_float.empty()) quantization["kept_float"] = record.kept_float;
  if (!record.accuracy.empty()) quantization["accuracy"] = record.accuracy;
  metadata["quantization"] = quantization.dump();
  write_model_file(out_path, metadata, out);
}

} // namespace pola::weights
