// Recognises a checkpoint by its first bytes rather than its file name.
#include "weights/checkpoint.h"

#include <fstream>

#include "weights/error.h"
#include "weights/file_access.h"

namespace pola::weights {

const char *weights_choice_name(WeightsChoice w) { return w == WeightsChoice::ema ? "ema" : "raw"; }

std::unique_ptr<Checkpoint> open_checkpoint(const std::string &path, WeightsChoice weights) {
  require_regular_file(path);  // a FIFO or device is refused, never waited on
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot open");
  unsigned char head[9] = {};
  f.read(reinterpret_cast<char *>(head), sizeof head);
  const auto got = static_cast<size_t>(f.gcount());
  if (got >= 4 && head[0] == 'P' && head[1] == 'K') return open_torch_checkpoint(path, weights);
  if (got >= 2 && head[0] == 0x80 && head[1] <= 5)
    throw InputError(path + ": this is a legacy (pre-zip) torch.save file or a bare pickle, which is not supported. "
                            "Re-save it with PyTorch >= 1.6: obj = torch.load(f, map_location='cpu'); "
                            "torch.save(obj, 'new.pth', _use_new_zipfile_serialization=True)");
  // safetensors: 8-byte little-endian header length, then a JSON object.
  if (got == 9 && head[8] == '{') {
    // A safetensors file (a model file too) holds one flat state dict: there
    // is no EMA copy beside it to choose.
    if (weights == WeightsChoice::ema)
      throw InputError(path + ": the EMA weights (--weights ema) were asked for, but a safetensors file or model "
                              "file holds a single state dict with no 'state_dict_ema' entry; convert it with "
                              "--weights raw (the default)");
    return open_safetensors_checkpoint(path);
  }
  throw InputError(path + ": not a recognised checkpoint (expected a torch.save zip file or a safetensors file)");
}

} // namespace pola::weights
