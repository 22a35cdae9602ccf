// `pola info MODEL [--json]`: what a model file holds, without running it.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>

#include "command.h"
#include "model/config_json.h"
#include "plural.h"
#include "weights/model_file.h"
#include "weights/model_metadata.h"
#include "weights/model_summary.h"

namespace {

constexpr size_t kClassesShown = 5; // the text form is a glance; --json lists them all

std::string first_names(const std::vector<std::string> &names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < kClassesShown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > kClassesShown) s += ", ... (all in --json)";
  return s;
}

// The preprocess object as a person reads it, in the order the pipeline
// applies the steps; keys this build does not know are shown as they are.
std::string describe_preprocess(const nlohmann::json &pre) {
  static const char *const kOrder[] = {"resize", "interpolation", "crop", "mean", "std", "channels", "input_size"};
  std::string s;
  auto add = [&s](const std::string &key, const nlohmann::json &v) {
    s += (s.empty() ? "" : ", ") + key + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  };
  for (const char *key : kOrder)
    if (pre.contains(key)) add(key, pre.at(key));
  for (const auto &kv : pre.items())
    if (std::find(std::begin(kOrder), std::end(kOrder), kv.key()) == std::end(kOrder)) add(kv.key(), kv.value());
  return s;
}

// The int8 layers of a `pola quantize` file, per kind, with their scales.
void print_int8(const nlohmann::json &q) {
  const nlohmann::json &scheme = q["scheme"];
  std::printf("  int8        %lld linear layers", static_cast<long long>(q["layers"].get<int64_t>()));
  if (scheme.is_object())
    std::printf(": weights %s; activations %s; calibrated on %s", scheme.value("weights", "?").c_str(),
                scheme.value("activations", "?").c_str(), scheme.value("calibration", "?").c_str());
  std::printf("\n");
  if (scheme.is_object() && scheme.contains("accuracy") && scheme["accuracy"].is_string())
    std::printf("    accuracy               %s\n", scheme["accuracy"].get<std::string>().c_str());
  if (scheme.is_object() && scheme.contains("kept_float") && scheme["kept_float"].is_array()) {
    std::printf("    kept float for accuracy");
    for (const auto &layer : scheme["kept_float"])
      if (layer.is_string()) std::printf(" %s", layer.get<std::string>().c_str());
    std::printf("\n");
  }
  for (const auto &kv : q["kinds"].items()) {
    const nlohmann::json &k = kv.value();
    std::printf("    %-22s %3lld x", kv.key().c_str(), static_cast<long long>(k.value("layers", 0)));
    if (k.contains("input_scale"))
      std::printf("  input scale %.3g..%.3g", k["input_scale"][0].get<double>(), k["input_scale"][1].get<double>());
    if (k.contains("weight_scale"))
      std::printf("  weight scale %.3g..%.3g", k["weight_scale"][0].get<double>(), k["weight_scale"][1].get<double>());
    std::printf("\n");
  }
}

pola::app::RegisterCommand register_info([](CLI::App &root) {
  struct Args {
    std::string model;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto *c = root.add_subcommand("info", "Describe a model file: family, config, parameters, class names, preprocessing, format");
  c->add_option("model", args->model, "model file (from `pola convert`)")->required();
  c->add_flag("--json", args->json, "print one JSON object");
  c->callback([args] {
    using namespace pola::weights;
    const ModelFile f = ModelFile::open(args->model);
    const nlohmann::json j = model_summary(f);
    const nlohmann::json &pre = j["preprocess"];
    const auto classes = j["classes"].get<std::vector<std::string>>();
    const pola::ModelConfig cfg = read_model_config(f);
    const std::string arch = j["arch"];
    const int64_t params = j["parameters"];
    if (args->json) {
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    std::printf("%s\n", f.path().c_str());
    std::printf("  format      %s version %s\n", f.metadata_at("format").c_str(), f.metadata_at("format_version").c_str());
    std::printf("  arch        %s (family %s)\n", arch.c_str(), pola::family_name(cfg.family));
    std::printf("  parameters  %lld (%.2f M) in %zu tensors\n", static_cast<long long>(params),
                static_cast<double>(params) / 1e6, f.tensors().size());
    std::string dtypes;  // e.g. "BF16 11.71 M, F32 1.21 M"
    for (const auto &kv : j["stored_dtypes"].items()) {
      char part[64];
      std::snprintf(part, sizeof part, "%s%s %.2f M", dtypes.empty() ? "" : ", ", kv.key().c_str(),
                    kv.value().get<double>() / 1e6);
      dtypes += part;
    }
    std::printf("  stored as   %s parameters\n", dtypes.c_str());
    std::printf("  file size   %llu bytes (%.1f MB)\n", static_cast<unsigned long long>(f.file_size()),
                static_cast<double>(f.file_size()) / 1e6);
    std::printf("  input       %lld x %lld, %s\n", static_cast<long long>(cfg.img_size),
                static_cast<long long>(cfg.img_size), pola::app::count_of(cfg.in_chans, "channel").c_str());
    std::printf("  classes     %zu: %s\n", classes.size(), first_names(classes).c_str());
    std::printf("  config      %s\n", j["config"].dump().c_str());
    std::printf("  preprocess  %s\n", describe_preprocess(pre).c_str());
    if (j.contains("int8")) print_int8(j["int8"]);
  });
});

} // namespace
