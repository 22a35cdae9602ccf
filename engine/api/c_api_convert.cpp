// pola_convert: `pola convert` for programs (the Python binding's
// polaformer.convert). The same converter and the same engine checks as the
// command, so a file converted either way loads the same.
#include <string>
#include <vector>

#include "convert_checks.h"
#include "guarded_call.h"
#include "weights/class_names.h"
#include "weights/converter.h"
#include "weights/file_access.h"

using pola::api::guarded_call;
using pola::api::require;

namespace {

std::vector<double> values_of(const double *values, int count, const char *field) {
  if (count < 1 || count > 4)
    throw pola::InputError(std::string("options->") + field + " must hold 1 to 4 values (one per input " +
                           "channel), got " + std::to_string(count));
  return std::vector<double>(values, values + count);
}

// Option values the caller set, checked before any file is opened.
pola::weights::MetadataOverrides overrides_from(const pola_convert_options &o) {
  pola::weights::MetadataOverrides m;
  require(!(o.labels_file && o.class_names), "give options->labels_file or options->class_names, not both");
  if (o.labels_file) {
    m.class_names = pola::weights::read_labels_file(o.labels_file);
    m.class_names_file = o.labels_file;
  }
  if (o.class_names) {
    require(o.num_class_names >= 0, "options->num_class_names must be >= 0");
    std::vector<std::string> names;
    for (int i = 0; i < o.num_class_names; ++i) {
      require(o.class_names[i] != nullptr, "options->class_names holds a NULL name");
      names.emplace_back(o.class_names[i]);
    }
    m.class_names = pola::weights::checked_class_names(names);
    m.class_names_file = "labels"; // messages: "labels: 9 class names, but the model has 10"
  }
  if (o.mean) m.mean = values_of(o.mean, o.num_mean, "mean");
  if (o.std) m.std = values_of(o.std, o.num_std, "std");
  require(o.resize >= 0 && o.crop >= 0, "options->resize and options->crop must be >= 0 (0 = keep)");
  if (o.resize) m.resize = o.resize;
  if (o.crop) m.crop = o.crop;
  if (o.interpolation) {
    pola::api::check_interpolation_name(o.interpolation, std::string("interpolation ") + o.interpolation);
    m.interpolation = o.interpolation;
  }
  return m;
}

} // namespace

extern "C" {

POLA_API pola_convert_options pola_default_convert_options(void) {
  pola_convert_options o;
  o.arch = nullptr;
  o.labels_file = nullptr;
  o.mean = nullptr;
  o.num_mean = 0;
  o.std = nullptr;
  o.num_std = 0;
  o.resize = 0;
  o.crop = 0;
  o.interpolation = nullptr;
  o.dtype = nullptr;
  o.class_names = nullptr;
  o.num_class_names = 0;
  o.weights = nullptr;
  return o;
}

POLA_API pola_status pola_convert(const char *checkpoint, const char *output, const pola_convert_options *options) {
  return guarded_call("pola_convert", [&] {
    require(checkpoint && output, "checkpoint and output must not be NULL");
    require(*checkpoint && *output, "checkpoint and output must not be empty");
    const pola_convert_options o = options ? *options : pola_default_convert_options();
    // Before anything is read: an output naming an input would destroy it.
    std::vector<std::string> inputs{checkpoint};
    if (o.labels_file) inputs.emplace_back(o.labels_file);
    pola::weights::check_output_is_not_input(output, inputs);
    pola::weights::ConvertOptions opt;
    if (o.arch) opt.arch = o.arch;
    if (o.dtype) {
      const std::string dtype = o.dtype;
      if (dtype != "f32" && dtype != "bf16")
        throw pola::InputError("dtype '" + dtype + "' is not one of f32, bf16 (how the weight matrices are stored)");
      if (dtype == "bf16") opt.weight_dtype = pola::weights::StoredDtype::bf16;
    }
    if (o.weights) {
      const std::string weights = o.weights;
      if (weights != "raw" && weights != "ema")
        throw pola::InputError("weights '" + weights + "' is not one of raw, ema (which state dict of a training "
                               "checkpoint is converted)");
      if (weights == "ema") opt.weights = pola::weights::WeightsChoice::ema;
    }
    opt.metadata = overrides_from(o);
    const std::string input_name = checkpoint;
    opt.check_preprocess = [input_name](const nlohmann::json &pre, const pola::ModelConfig &config) {
      pola::api::check_engine_can_run(pre, config, input_name);
    };
    pola::weights::convert_checkpoint(checkpoint, output, opt);
  });
}

} // extern "C"
