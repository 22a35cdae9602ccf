// `--precision fp32|bf16|auto`, the same option on every command that runs a
// model (run, classify, eval, bench): one helper so that all of them say and
// accept the same thing.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "engine/precision.h"

namespace pola::app {

inline CLI::Option *add_precision_option(CLI::App &cmd, PrecisionRequest &out) {
  static const std::map<std::string, PrecisionRequest> kNames{
      {"fp32", PrecisionRequest::fp32}, {"bf16", PrecisionRequest::bf16}, {"auto", PrecisionRequest::automatic}};
  return cmd
      .add_option("--precision", out,
                  "Arithmetic of the linear layers and patch embeddings: fp32 (default, exact), bf16 (needs "
                  "AMX-BF16 or AVX512-BF16; fp32 accumulation, norms/softmax/attention stay fp32) or auto (bf16 "
                  "where faster: with AMX-BF16; `pola --version` says which)")
      ->transform(CLI::CheckedTransformer(kNames))
      ->default_str("fp32");
}

} // namespace pola::app
