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
                  "fp32 (default, exact); bf16 (needs AMX-BF16 or AVX512-BF16): linear layers and patch "
                  "embeddings in bf16 with fp32 accumulation, and the attention products (polarity cores, softmax "
                  "windows) too where bf16 products are faster than fp32 FMAs here; norms, softmax, feature maps and residuals stay fp32; "
                  "auto: bf16 where it is faster (AMX-BF16, or AVX512-BF16 dot products measured at >= 1.5x the "
                  "FMA rate), else fp32. `pola --version` says what bf16 and auto do on this CPU")
      ->transform(CLI::CheckedTransformer(kNames))
      ->option_text("fp32|bf16|auto")
      ->default_str("fp32");
}

} // namespace pola::app
