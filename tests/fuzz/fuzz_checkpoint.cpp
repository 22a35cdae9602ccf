// Fuzz target: `pola convert` on a whole file: a torch.save zip (libzip, our
// restricted pickle reader, storage and view checks) or a safetensors file,
// then config detection, the tensor checklist and the model file writer. Every
// floating tensor is also read on its own, strided views included, to reach
// the view arithmetic the converter skips for unexpected tensors.
#include <cstdint>

#include "tests/fuzz/fuzz_temp_file.h"
#include "weights/checkpoint.h"
#include "weights/converter.h"
#include "weights/error.h"

namespace {

void read_every_tensor(const std::string &path) {
  try {
    auto ck = pola::weights::open_checkpoint(path);
    for (size_t i = 0; i < ck->tensors().size(); ++i) {
      if (!ck->tensors()[i].floating) continue;
      try {
        ck->read_f32(i);
      } catch (const pola::InputError &) {
      }
    }
  } catch (const pola::InputError &) {
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static pola::fuzz::TempFile input(".pth");
  static pola::fuzz::TempFile output(".pola");
  input.write(data, size);
  read_every_tensor(input.path());
  try {
    pola::weights::convert_checkpoint(input.path(), output.path(), {});
  } catch (const pola::InputError &) {
  }
  return 0;
}
