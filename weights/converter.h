// `pola convert`: checkpoint (torch.save zip or safetensors) -> model file.
// Reads, detects the config, validates every tensor and the metadata to write
// against it, and only then writes (atomically), so a bad checkpoint or a bad
// option never leaves a half-written model. A model file is a valid input too:
// its config, class names and preprocessing are kept unless overridden.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "weights/checkpoint.h"
#include "weights/metadata_overrides.h"
#include "weights/model_file.h"
#include "model/model_config.h"
#include "model/tensor_list.h"

namespace pola::weights {

struct ConvertOptions {
  std::string arch; // preset name to check the checkpoint against; empty: detect only
  MetadataOverrides metadata; // class names / preprocessing to write instead of the input's or the defaults
  // Called with the `preprocess` object about to be written, before anything
  // is written; throws pola::InputError to refuse it. weights/ knows the
  // format, not what the engine can run, so `pola convert` passes the
  // engine's own check here. May be empty.
  std::function<void(const nlohmann::json &preprocess, const ModelConfig &config)> check_preprocess;
  // How the weight matrices of the linear layers and dense convolutions (patch
  // embeddings, stems, downsampling, 1x1 heads: `*.weight` of rank >= 2 that is
  // not a depthwise kernel, which runs fp32) are stored; every other tensor
  // (biases, norms, polarity parameters, positional encodings, RoPE angles,
  // depthwise kernels) stays F32. `pola convert --dtype bf16` sets bf16.
  StoredDtype weight_dtype = StoredDtype::f32;
  // Which state dict of a checkpoint holding both 'model' (raw) and
  // 'state_dict_ema' (EMA) is converted (`pola convert --weights`).
  WeightsChoice weights = WeightsChoice::raw;
};

// Whether `weight_dtype` applies to the tensor `spec` describes.
bool is_weight_matrix(const TensorSpec &spec);

struct ConvertReport {
  std::string container; // "torch zip" / "safetensors" / "model file"
  std::string arch;      // preset name or "custom"
  ModelConfig config;
  std::vector<std::string> class_names; // as written
  nlohmann::json preprocess;            // as written
  std::vector<std::string> notes; // wrapper keys ignored, prefixes stripped, dtypes converted, ...
  size_t tensors_written = 0;
  size_t buffers_dropped = 0;
  size_t batchnorms_folded = 0; // BatchNorms folded into the convolutions before them
  int64_t parameters = 0;
  uint64_t output_bytes = 0;
  double open_seconds = 0;  // zip + pickle / header parsing
  double read_seconds = 0;  // tensor data read and converted to F32
  double check_seconds = 0; // config detection and validation
  double write_seconds = 0; // model file written
};

ConvertReport convert_checkpoint(const std::string &input, const std::string &output, const ConvertOptions &options);

} // namespace pola::weights
