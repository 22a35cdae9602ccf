#include "weights/converter.h"

#include <chrono>
#include <map>
#include <set>

#include "model/config_json.h"
#include "model/preprocess_defaults.h"
#include "model/presets.h"
#include "weights/batchnorm_fold.h"
#include "weights/checkpoint.h"
#include "weights/class_names.h"
#include "weights/config_detect.h"
#include "weights/error.h"
#include "weights/finite_check.h"
#include "weights/model_file.h"
#include "weights/model_metadata.h"
#include "weights/tensor_check.h"

namespace pola::weights {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// DistributedDataParallel wraps every name in "module."; strip it when all have it.
void strip_ddp_prefix(Checkpoint &ck, std::vector<std::string> &notes) {
  const std::string p = "module.";
  if (ck.tensors().empty()) return;
  for (const auto &t : ck.tensors())
    if (t.name.compare(0, p.size(), p) != 0) return;
  for (size_t i = 0; i < ck.tensors().size(); ++i) ck.rename(i, ck.tensors()[i].name.substr(p.size()));
  notes.push_back("stripped the 'module.' prefix from every tensor name");
}

// A PolaFormer model file (FORMAT.md) given as the input: re-converting it
// (e.g. to change its class names) must keep what only its metadata knows.
bool is_model_file(const Checkpoint &ck) {
  const auto it = ck.metadata().find("format");
  return it != ck.metadata().end() && it->second == kFormatName;
}

// Converting reads every tensor as float and writes float: an int8 file's
// weights would be copied rounded to int8 steps and their scales refused as
// unexpected tensors. Quantizing is the last step (FORMAT.md).
void refuse_int8_model_file(const Checkpoint &ck, const std::string &path) {
  for (const auto &t : ck.tensors())
    if (t.dtype == stored_dtype_name(StoredDtype::i8))
      throw InputError(path + ": an int8 (quantized) model file (tensor '" + t.name +
                       "' is I8); convert the float model, then quantize it with `pola quantize`");
}

// The model file's own config, class names and preprocessing. Its config is
// used as stored rather than re-detected: some fields (alpha, unclipped
// windows) cannot be recovered from tensor shapes.
void read_model_file_metadata(const std::string &path, ConvertReport &rep) {
  const ModelFile f = ModelFile::open(path);
  rep.config = read_model_config(f);
  rep.class_names = read_class_names(f, rep.config);
  rep.preprocess = read_preprocess(f);
  // A custom model's name ("fashion_pola_pvt") is not derivable from its config.
  if (f.metadata().count("arch")) rep.arch = f.metadata_at("arch");
}

std::string preset_names() {
  std::string s;
  for (const auto &p : presets()) s += (s.empty() ? "" : ", ") + p.first;
  return s;
}

} // namespace

bool is_weight_matrix(const TensorSpec &spec) {
  const std::string &name = spec.name, suffix = ".weight";
  const bool weight = name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  // The depthwise kernels (PVT/Swin `attn.dwc`, PolaFormer++ `pos`, `attn.lepe`, `ffn.dwconv`) run in fp32 at
  // every precision: rounding them would cost accuracy and save almost nothing.
  return spec.shape.size() >= 2 && weight && !spec.depthwise;
}

ConvertReport convert_checkpoint(const std::string &input, const std::string &output, const ConvertOptions &options) {
  ConvertReport rep;
  const ModelConfig *wanted = nullptr;
  if (!options.arch.empty()) {
    wanted = find_preset(options.arch);
    if (!wanted) throw InputError("--arch " + options.arch + " is not a known architecture; choose one of " + preset_names());
  }

  auto t = Clock::now();
  std::unique_ptr<Checkpoint> ck = open_checkpoint(input, options.weights);
  rep.container = ck->container();
  rep.notes = ck->notes();
  strip_ddp_prefix(*ck, rep.notes);
  rep.open_seconds = since(t);

  t = Clock::now();
  ShapeMap shapes;
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < ck->tensors().size(); ++i) {
    const auto &ct = ck->tensors()[i];
    if (!index_of.emplace(ct.name, i).second) throw InputError(input + ": tensor '" + ct.name + "' appears twice");
    shapes[ct.name] = ct.shape;
  }
  const bool model_file_input = is_model_file(*ck);
  if (model_file_input) refuse_int8_model_file(*ck, input);
  if (model_file_input) {
    read_model_file_metadata(input, rep);
    rep.container = "model file";
    rep.notes.push_back("the input is a model file: kept its config, arch name, class names and preprocessing "
                        "(except what the options set)");
  } else {
    rep.config = detect_config(shapes, input);
    rep.class_names = default_class_names(rep.config.num_classes);
    rep.preprocess = preprocess_for(rep.config);
  }
  if (wanted) {
    auto diffs = config_differences(*wanted, rep.config);
    if (!diffs.empty()) {
      std::string msg = input + ": the checkpoint is not " + options.arch + " (" + options.arch + " vs file):";
      for (const auto &d : diffs) msg += "\n  " + d;
      throw InputError(msg);
    }
  }
  if (rep.arch.empty()) rep.arch = arch_name(rep.config);
  rep.config.arch = rep.arch;

  const std::vector<TensorSpec> specs = expected_tensors(rep.config);
  // A model file's BatchNorms are already folded; a checkpoint's must all be there to fold.
  TensorCheck check = check_tensors(shapes, specs, /*checkpoint=*/!model_file_input);
  for (const auto &name : ck->non_tensor_entries()) check.extra.push_back(name + " (not a tensor)");
  if (!check.ok())
    throw InputError(input + ": the tensors do not match the detected " + rep.arch + " config " +
                     config_to_json(rep.config).dump() + ":" + check.describe());
  for (const auto &spec : specs) {
    auto it = index_of.find(spec.name);
    if (it == index_of.end() || spec.use == TensorSpec::Use::Dropped) continue;
    const auto &ct = ck->tensors()[it->second];
    if (!ct.floating) throw InputError(input + ": tensor '" + ct.name + "' is " + ct.dtype + ", expected floating point");
  }
  // The metadata is settled and checked before any tensor is read or a byte
  // written, so a bad option costs nothing and leaves no file behind.
  rep.class_names = override_class_names(rep.class_names, options.metadata, rep.config);
  rep.preprocess = override_preprocess(rep.preprocess, options.metadata, rep.config);
  if (options.check_preprocess) options.check_preprocess(rep.preprocess, rep.config);
  rep.check_seconds = since(t);

  t = Clock::now();
  // Every tensor kept is read first (BatchNorm entries too), then the
  // BatchNorms are folded into their convs, then the rest is written in spec
  // order. Map nodes do not move, so `out` may point into `data`.
  std::map<std::string, std::vector<float>> data;
  std::set<std::string> converted_dtypes;
  for (const auto &spec : specs) {
    auto it = index_of.find(spec.name);
    if (it == index_of.end()) continue;
    if (spec.use == TensorSpec::Use::Dropped) {
      ++rep.buffers_dropped;
      continue;
    }
    const auto &ct = ck->tensors()[it->second];
    if (ct.dtype != "F32") converted_dtypes.insert(ct.dtype);
    std::vector<float> &v = data[spec.name] = ck->read_f32(it->second);
    // A NaN or Inf weight would make every answer NaN: refuse it here, naming it.
    const NonFinite bad = find_nonfinite(v.data(), v.size());
    if (bad.count)
      throw InputError(input + ": tensor '" + spec.name + "' holds " + describe_nonfinite(bad, v.data()) +
                       "; a model with such weights cannot give finite answers");
  }
  rep.batchnorms_folded = fold_batch_norms(specs, data, input);
  if (rep.batchnorms_folded)
    rep.notes.push_back("folded " + std::to_string(rep.batchnorms_folded) +
                        " eval-mode BatchNorms into the convolutions before them (exact up to float rounding)");
  std::vector<TensorToWrite> out;
  for (const auto &spec : specs) {
    auto it = data.find(spec.name);
    if (it == data.end() || spec.use == TensorSpec::Use::Folded) continue;
    const StoredDtype dt = is_weight_matrix(spec) ? options.weight_dtype : StoredDtype::f32;
    out.push_back({spec.name, spec.shape, it->second.data(), dt});
    rep.parameters += static_cast<int64_t>(it->second.size());
  }
  for (const auto &d : converted_dtypes) rep.notes.push_back("converted " + d + " tensors to F32");
  if (options.weight_dtype == StoredDtype::bf16)
    rep.notes.push_back("weight matrices stored as BF16 (rounded to nearest even); other tensors F32");
  rep.tensors_written = out.size();
  rep.read_seconds = since(t);

  t = Clock::now();
  write_model_file(output, make_metadata(rep.config, rep.arch, rep.class_names, rep.preprocess), out);
  rep.write_seconds = since(t);
  rep.output_bytes = ModelFile::open(output).file_size(); // re-validates what was written
  return rep;
}

} // namespace pola::weights
