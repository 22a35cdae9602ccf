// `pola convert CHECKPOINT -o OUT [--arch NAME] [--labels FILE] [--mean ..] ...`:
// official checkpoint (or an existing model file) -> model file, optionally
// setting the class names and preprocessing its metadata holds.
#include <cstdio>
#include <string>

#include "weights/file_access.h"
#include "cli_checks.h"
#include "command.h"
#include "engine/api/convert_checks.h"
#include "number_list.h"
#include "weights/class_names.h"
#include "weights/converter.h"

namespace {

struct ConvertArgs {
  std::string input, output, arch, labels, mean, std, interpolation, dtype = "f32", weights = "raw";
  int64_t resize = 0, crop = 0;
};

pola::weights::MetadataOverrides overrides_from(const ConvertArgs &a, const CLI::App &c) {
  pola::weights::MetadataOverrides o;
  if (!a.labels.empty()) {
    o.class_names = pola::weights::read_labels_file(a.labels);
    o.class_names_file = a.labels;
  }
  if (c.count("--mean")) o.mean = pola::app::parse_number_list("--mean", a.mean);
  if (c.count("--std")) o.std = pola::app::parse_number_list("--std", a.std);
  if (c.count("--resize")) o.resize = a.resize;
  if (c.count("--crop")) o.crop = a.crop;
  if (c.count("--interpolation")) {
    pola::api::check_interpolation_name(a.interpolation, "--interpolation " + a.interpolation);
    o.interpolation = a.interpolation;
  }
  return o;
}

std::string first_names(const std::vector<std::string> &names, size_t shown) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < shown; ++i) s += (i ? ", " : "") + names[i];
  return s + (names.size() > shown ? ", ..." : "");
}

pola::app::RegisterCommand register_convert([](CLI::App &root) {
  auto args = std::make_shared<ConvertArgs>();
  auto *c = root.add_subcommand("convert",
                                "Convert a PolaFormer checkpoint (torch.save .pth or .safetensors) to a model file, "
                                "or re-write a model file with other class names or preprocessing");
  c->add_option("checkpoint", args->input,
                "torch.save zip checkpoint, safetensors file, or a model file (its class names and preprocessing are "
                "kept unless the options below change them)")
      ->required();
  c->add_option("-o,--output", args->output, "model file to write")->required();
  c->add_option("--arch", args->arch,
                "expected architecture (pola_pvt_tiny|small|medium|large, pola_swin_t|s|b|b_384, pola_pp_b0..b5); checked "
                "against the file");
  c->add_option("--labels", args->labels,
                "class names: a text file with one name per line, in class-index order, one line per class "
                "(blank lines at the end are ignored)")
      ->type_name("FILE");
  c->add_option("--mean", args->mean, "normalization mean per input channel, comma-separated, e.g. 0.5,0.5,0.5")
      ->type_name("a,b,c");
  c->add_option("--std", args->std, "normalization std per input channel (each > 0), comma-separated, e.g. 0.25,0.25,0.25")
      ->type_name("a,b,c");
  c->add_option("--resize", args->resize, "square size images are resized to before the center crop")
      ->type_name("N")
      ->default_str(""); // absent means "keep", not 0
  c->add_option("--crop", args->crop, "center-crop size; must equal the model's input size and be <= --resize")
      ->type_name("N")
      ->default_str("");
  c->add_option("--interpolation", args->interpolation, "resize filter; the engine implements: bicubic")
      ->type_name("NAME");
  c->add_option("--dtype", args->dtype,
                "how the weights of linear layers and dense convolutions (patch embeddings, stems, downsampling, 1x1 "
                "heads) are stored: f32 (default) or bf16 (about half the file, rounded to nearest even; biases, "
                "norms, polarity parameters, RoPE angles and depthwise kernels stay f32)")
      ->check(pola::app::one_of({"f32", "bf16"}));
  c->add_option("--weights", args->weights,
                "which weights of a training checkpoint holding both to convert: raw (default; its 'model' entry) or "
                "ema (its 'state_dict_ema' entry, the exponential moving average); ema is refused for a file "
                "without 'state_dict_ema'")
      ->check(pola::app::one_of({"raw", "ema"}));
  c->callback([args, c] {
    // Before anything is read: `-o` naming the checkpoint (or the labels file) would destroy it.
    pola::weights::check_output_is_not_input(args->output, {args->input, args->labels});
    pola::weights::ConvertOptions opt;
    opt.arch = args->arch;
    opt.weight_dtype = args->dtype == "bf16" ? pola::weights::StoredDtype::bf16 : pola::weights::StoredDtype::f32;
    opt.weights = args->weights == "ema" ? pola::weights::WeightsChoice::ema : pola::weights::WeightsChoice::raw;
    opt.metadata = overrides_from(*args, *c); // labels file read (and checked) before the checkpoint is opened
    opt.check_preprocess = [args](const nlohmann::json &pre, const pola::ModelConfig &config) {
      pola::api::check_engine_can_run(pre, config, args->input);
    };
    const auto r = pola::weights::convert_checkpoint(args->input, args->output, opt);
    std::printf("converted %s (%s) -> %s\n", args->input.c_str(), r.container.c_str(), args->output.c_str());
    std::printf("  arch %s, family %s, %.2f M parameters in %zu tensors", r.arch.c_str(), pola::family_name(r.config.family),
                static_cast<double>(r.parameters) / 1e6, r.tensors_written);
    if (r.buffers_dropped) std::printf(", %zu recomputable buffers dropped", r.buffers_dropped);
    if (r.batchnorms_folded) std::printf(", %zu BatchNorms folded", r.batchnorms_folded);
    std::printf("\n");
    std::printf("  classes %zu (%s)\n", r.class_names.size(), first_names(r.class_names, 5).c_str());
    std::printf("  preprocess %s\n", r.preprocess.dump().c_str());
    for (const auto &n : r.notes) std::printf("  note: %s\n", n.c_str());
    std::printf("  time: open %.3f s, check %.3f s, read %.3f s, write %.3f s (%.1f MB written)\n", r.open_seconds,
                r.check_seconds, r.read_seconds, r.write_seconds, static_cast<double>(r.output_bytes) / 1e6);
  });
});

} // namespace
