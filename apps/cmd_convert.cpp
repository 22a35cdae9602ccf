// `pola convert CHECKPOINT -o OUT [--arch NAME]`: official checkpoint -> model file.
#include <cstdio>
#include <string>

#include "command.h"
#include "weights/converter.h"

namespace {

pola::app::RegisterCommand reg([](CLI::App &root) {
  struct Args {
    std::string input, output, arch;
  };
  auto args = std::make_shared<Args>();
  auto *c = root.add_subcommand("convert",
                                "Convert a PolaFormer checkpoint (torch.save .pth or .safetensors) to a model file");
  c->add_option("checkpoint", args->input, "torch.save zip checkpoint or safetensors file")->required();
  c->add_option("-o,--output", args->output, "model file to write")->required();
  c->add_option("--arch", args->arch,
                "expected architecture (pola_pvt_tiny|small|medium|large, pola_swin_t|s|b|b_384); checked against the file");
  c->callback([args] {
    pola::weights::ConvertOptions opt;
    opt.arch = args->arch;
    const auto r = pola::weights::convert_checkpoint(args->input, args->output, opt);
    std::printf("converted %s (%s) -> %s\n", args->input.c_str(), r.container.c_str(), args->output.c_str());
    std::printf("  arch %s, family %s, %.2f M parameters in %zu tensors", r.arch.c_str(), r.config.family.c_str(),
                static_cast<double>(r.parameters) / 1e6, r.tensors_written);
    if (r.buffers_dropped) std::printf(", %zu recomputable buffers dropped", r.buffers_dropped);
    std::printf("\n");
    for (const auto &n : r.notes) std::printf("  note: %s\n", n.c_str());
    std::printf("  time: open %.3f s, check %.3f s, read %.3f s, write %.3f s (%.1f MB written)\n", r.open_seconds,
                r.check_seconds, r.read_seconds, r.write_seconds, static_cast<double>(r.output_bytes) / 1e6);
  });
});

} // namespace
