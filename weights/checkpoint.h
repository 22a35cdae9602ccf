// A checkpoint to convert, whatever its container: a list of named tensors
// with shapes, read on demand as float32. Implementations: torch.save zip
// files (torch_checkpoint.cpp) and safetensors files (safetensors_checkpoint.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pola::weights {

struct CheckpointTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;    // "F32", "F16", "BF16", "F64", "I64", ... (safetensors names)
  bool floating = false; // convertible to F32
};

class Checkpoint {
 public:
  virtual ~Checkpoint() = default;
  const std::string &path() const { return path_; }
  // "torch zip" or "safetensors".
  const std::string &container() const { return container_; }
  const std::vector<CheckpointTensor> &tensors() const { return tensors_; }
  // State-dict entries that are not tensors (names), e.g. stray ints.
  const std::vector<std::string> &non_tensor_entries() const { return non_tensors_; }
  // The file's own string metadata (safetensors `__metadata__`); empty for
  // torch files. A PolaFormer model file keeps its class names and
  // preprocessing here (FORMAT.md), which re-converting it must not lose.
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  // Human-readable remarks, e.g. which wrapper keys were ignored.
  const std::vector<std::string> &notes() const { return notes_; }
  // The tensor's data as contiguous row-major float32. Throws InputError for
  // non-floating tensors or data the file does not actually hold.
  virtual std::vector<float> read_f32(size_t index) = 0;
  // Renames tensors (e.g. strips a DDP "module." prefix).
  void rename(size_t index, std::string name) { tensors_[index].name = std::move(name); }

 protected:
  std::string path_, container_;
  std::vector<CheckpointTensor> tensors_;
  std::vector<std::string> non_tensors_, notes_;
  std::map<std::string, std::string> metadata_;
};

// Which state dict of a training checkpoint is read when it holds both the raw
// weights ('model') and their exponential moving average ('state_dict_ema'),
// as PolaFormer++'s do (SPEC-polaformerpp 3.3). raw is the default; ema is
// refused for a file without 'state_dict_ema' (a plain state dict, a
// safetensors file, a model file).
enum class WeightsChoice { raw, ema };
const char *weights_choice_name(WeightsChoice w); // "raw" / "ema"

// Opens a torch.save zip file or a safetensors file, recognised by content.
// Legacy (pre-1.6, non-zip) torch files are refused with advice on re-saving.
std::unique_ptr<Checkpoint> open_checkpoint(const std::string &path, WeightsChoice weights = WeightsChoice::raw);

std::unique_ptr<Checkpoint> open_torch_checkpoint(const std::string &path, WeightsChoice weights = WeightsChoice::raw);
std::unique_ptr<Checkpoint> open_safetensors_checkpoint(const std::string &path);

} // namespace pola::weights
