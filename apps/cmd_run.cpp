// `pola run`: logits for an NCHW .npy batch (real numbers of any dtype, C or
// Fortran order, read as float32 as Model.run converts them), written as a .npy.
// With --dump-dir every named node's output is written as <name>.npy so any
// intermediate can be compared with the PyTorch reference.
#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_checks.h"
#include "command.h"
#include "input_batch.h"
#include "precision_option.h"
#include "weights/file_access.h"
#include "engine/io/npy.h"
#include "engine/model.h"
#include "weights/error.h"

namespace {

void run_command(const std::string &model_path, const std::string &input_path, const std::string &output_path,
                 int threads, const std::string &dump_dir, bool allow_nonfinite, pola::PrecisionRequest precision,
                 bool pad, bool low_memory) {
  pola::weights::check_output_is_not_input(output_path, {model_path, input_path});
  pola::ModelOptions opt;
  opt.threads = threads;
  opt.allow_nonfinite = allow_nonfinite;
  opt.precision = precision;
  opt.low_memory = low_memory;
  auto model = pola::Model::load(model_path, opt);
  const auto &cfg = model->config();
  // The memory the run needs is checked from the array's header, before the
  // array itself is read: a refused run allocates nothing.
  if (const auto shape = pola::app::peek_input_batch(input_path, cfg, pad)) {
    try {
      model->check_memory(static_cast<int>(shape->batch), shape->height, shape->width);
    } catch (const pola::InputError &e) {
      throw pola::InputError(input_path + ": " + e.what());
    }
  }
  // Any size the model accepts (multiples of 32 for the released models); --pad pads up to one.
  pola::app::InputBatch in = pola::app::read_input_batch(input_path, cfg, pad);
  const int64_t batch = in.batch;

  pola::NodeObserver dumper;
  size_t dumped = 0;
  if (!dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dump_dir, ec);
    if (ec || !std::filesystem::is_directory(dump_dir))
      throw pola::InputError(dump_dir + ": --dump-dir cannot be used as a directory" +
                             (ec ? " (" + ec.message() + ")" : std::string(" (it exists and is not one)")));
    // Every output of every node, as float32, named after the node (a second
    // output adds `.out<k>`) and, when the tensor is held in another dtype,
    // that dtype (`block1.0.norm1.bf16.npy`).
    dumper = [&](const pola::Node &node, double) {
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        // Copied now: the arena plan lets later tensors reuse this memory.
        const pola::TensorView &v = node.outputs[k];
        std::vector<float> dense(v.rows() * v.cols());
        for (int64_t r = 0; r < v.rows(); ++r)
          for (int64_t c = 0; c < v.cols(); ++c) dense[r * v.cols() + c] = v.value(r, c);
        std::string file = node.name + (k ? ".out" + std::to_string(k) : "");
        if (v.dtype() != pola::DType::f32) file += std::string(".") + pola::dtype_name(v.dtype());
        pola::io::write_npy(dump_dir + "/" + file + ".npy", node.output_shapes[k], dense.data());
        ++dumped;
      }
    };
  }
  std::vector<float> logits(batch * cfg.num_classes);
  try {
    model->run(in.array.data.data(), static_cast<int>(batch), in.height, in.width, logits.data(),
               dump_dir.empty() ? nullptr : &dumper);
  } catch (const pola::InputError &e) {  // non-finite input or logits: say which file
    throw pola::InputError(input_path + ": " + e.what());
  }
  pola::io::write_npy(output_path, {batch, cfg.num_classes}, logits.data());
  // What was written, on stderr: stdout stays clean for `-o /dev/stdout`.
  std::fprintf(stderr, "pola run: wrote %s: float32 logits (%lld, %lld)", output_path.c_str(),
               static_cast<long long>(batch), static_cast<long long>(cfg.num_classes));
  if (!dump_dir.empty()) std::fprintf(stderr, "; %zu intermediates in %s", dumped, dump_dir.c_str());
  std::fputc('\n', stderr);
}

pola::app::RegisterCommand register_run([](CLI::App &root) {
  auto *cmd = root.add_subcommand("run", "Run a model on an NCHW .npy batch; write (batch, classes) float32 logits");
  auto model = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto dump = std::make_shared<std::string>();
  auto threads = std::make_shared<int>(0);
  cmd->add_option("--model,-m", *model, "Model file (.pola)")->required();
  cmd->add_option("--input,-i", *input, "Input .npy (batch, channels, height, width) of real numbers: float32, or float16/64 or integers (either byte order, C or Fortran order) converted to float32 as Python's Model.run does")->required();
  cmd->add_option("--output,-o", *output, "Output .npy of float32 logits (batch, classes)")->required();
  cmd->add_option("--threads,-t", *threads, "Worker threads (0 = all cores)")
      ->check(pola::app::whole_number_in(0, 1024));
  cmd->add_option("--dump-dir", *dump, "Write every node's outputs as float32 DIR/<node>.npy (a second output <node>.out1.npy; a tensor held in bf16 adds .bf16)");
  auto allow_nonfinite = std::make_shared<bool>(false);
  cmd->add_flag("--allow-nonfinite", *allow_nonfinite,
                "Run inputs holding NaN or Inf, and write non-finite logits, instead of refusing them");
  auto precision = std::make_shared<pola::PrecisionRequest>(pola::PrecisionRequest::fp32);
  pola::app::add_precision_option(*cmd, *precision);
  auto pad = std::make_shared<bool>(false);
  cmd->add_flag("--pad", *pad, "Pad the images with zeros (bottom, right) to the next size the model accepts");
  auto low_memory = std::make_shared<bool>(false);
  pola::app::add_low_memory_flag(*cmd, *low_memory);
  cmd->callback([=] {
    run_command(*model, *input, *output, *threads, *dump, *allow_nonfinite, *precision, *pad, *low_memory);
  });
});

} // namespace
