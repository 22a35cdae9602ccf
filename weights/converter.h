// `pola convert`: checkpoint (torch.save zip or safetensors) -> model file.
// Reads, detects the config, validates every tensor against it, and only then
// writes (atomically), so a bad checkpoint never leaves a half-written model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weights/model_config.h"

namespace pola::weights {

struct ConvertOptions {
  std::string arch; // preset name to check the checkpoint against; empty: detect only
};

struct ConvertReport {
  std::string container; // "torch zip" / "safetensors"
  std::string arch;      // preset name or "custom"
  ModelConfig config;
  std::vector<std::string> notes; // wrapper keys ignored, prefixes stripped, dtypes converted, ...
  size_t tensors_written = 0;
  size_t buffers_dropped = 0;
  int64_t parameters = 0;
  uint64_t output_bytes = 0;
  double open_seconds = 0;  // zip + pickle / header parsing
  double read_seconds = 0;  // tensor data read and converted to F32
  double check_seconds = 0; // config detection and validation
  double write_seconds = 0; // model file written
};

ConvertReport convert_checkpoint(const std::string &input, const std::string &output, const ConvertOptions &options);

} // namespace pola::weights
