// What a model file describes about itself, as one JSON object: the body of
// `pola info --json`, of the C API's pola_model_info_json and of what the
// server and the Python binding report, so all of them say the same thing.
#pragma once

#include <nlohmann/json.hpp>

#include "weights/model_file.h"

namespace pola::weights {

// path, format, format_version, arch, family, config, preprocess,
// parameters, tensors, stored_dtypes ({"F32": parameters, "BF16": ..., "I8": ...}),
// file_bytes, num_classes, classes, and for an int8 file `int8`
// (weights/int8_summary.h). Checks the file as
// loading does (format, config, tensors, class names); throws InputError.
nlohmann::json model_summary(const ModelFile &file);

} // namespace pola::weights
