// `pola info MODEL [--json]`: what a model file holds, without running it.
#include <cstdio>
#include <string>

#include "command.h"
#include "weights/model_file.h"
#include "weights/model_metadata.h"

namespace {

pola::app::RegisterCommand reg([](CLI::App &root) {
  struct Args {
    std::string model;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto *c = root.add_subcommand("info", "Describe a model file: family, config, parameters, format");
  c->add_option("model", args->model, "model file (from `pola convert`)")->required();
  c->add_flag("--json", args->json, "print one JSON object");
  c->callback([args] {
    using namespace pola::weights;
    const ModelFile f = ModelFile::open(args->model);
    const ModelConfig cfg = read_model_config(f);
    check_model_tensors(f, cfg);
    const auto classes = read_class_names(f, cfg);
    const nlohmann::json pre = read_preprocess(f);
    int64_t params = 0;
    for (const auto &t : f.tensors()) params += t.numel;
    const std::string arch = f.metadata().count("arch") ? f.metadata_at("arch") : "custom";

    nlohmann::json j;
    j["path"] = f.path();
    j["format"] = f.metadata_at("format");
    j["format_version"] = f.metadata_at("format_version");
    j["arch"] = arch;
    j["family"] = cfg.family;
    j["config"] = config_to_json(cfg);
    j["preprocess"] = pre;
    j["parameters"] = params;
    j["tensors"] = f.tensors().size();
    j["file_bytes"] = f.file_size();
    j["num_classes"] = classes.size();
    if (args->json) {
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    std::printf("%s\n", f.path().c_str());
    std::printf("  format      %s version %s\n", f.metadata_at("format").c_str(), f.metadata_at("format_version").c_str());
    std::printf("  arch        %s (family %s)\n", arch.c_str(), cfg.family.c_str());
    std::printf("  parameters  %lld (%.2f M) in %zu tensors\n", static_cast<long long>(params),
                static_cast<double>(params) / 1e6, f.tensors().size());
    std::printf("  file size   %llu bytes (%.1f MB)\n", static_cast<unsigned long long>(f.file_size()),
                static_cast<double>(f.file_size()) / 1e6);
    std::printf("  input       %lld x %lld, %lld channels\n", static_cast<long long>(cfg.img_size),
                static_cast<long long>(cfg.img_size), static_cast<long long>(cfg.in_chans));
    std::printf("  classes     %zu (%s%s)\n", classes.size(), classes.empty() ? "" : classes[0].c_str(),
                classes.size() > 1 ? ", ..." : "");
    std::printf("  config      %s\n", j["config"].dump().c_str());
    std::printf("  preprocess  %s\n", pre.dump().c_str());
  });
});

} // namespace
