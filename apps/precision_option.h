// `--precision fp32|bf16|int8|auto`, the same option on every command that runs a
// model (run, classify, eval, bench): one helper so that all of them say and
// accept the same thing.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "engine/precision.h"

namespace pola::app {

inline CLI::Option *add_precision_option(CLI::App &cmd, PrecisionRequest &out) {
  // The option stores the enum, which CLI11 converts from its integer value:
  // the name is mapped to that here, with a refusal that lists the names.
  const CLI::Validator names(
      [](std::string &text) -> std::string {
        PrecisionRequest request{};
        if (!precision_request_from_name(text, request))
          return "'" + text + "' is not a precision: give fp32, bf16, int8 or auto";
        text = std::to_string(static_cast<int>(request));
        return "";
      },
      "");
  // One line: what bf16 and auto do depends on the CPU, which `pola --version` reports.
  return cmd
      .add_option("--precision", out,
                  "fp32 (default, exact), bf16, int8 or auto; `pola --version` says what each does here")
      ->transform(names)
      ->option_text("PRECISION")
      ->default_str("fp32");
}

// `--low-memory` (ModelOptions::low_memory), worded alike on every command that has it.
inline CLI::Option *add_low_memory_flag(CLI::App &cmd, bool &out) {
  return cmd.add_flag("--low-memory", out,
                      "Read fp32 weights straight from the model file, without packed copies (less memory, "
                      "slower GEMMs)");
}

} // namespace pola::app
