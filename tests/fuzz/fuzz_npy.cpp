// Fuzz target: the .npy reader (engine/io/npy.h), the parser of every `pola run`
// input. Accepted arrays must survive a write/read round trip unchanged.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "engine/io/npy.h"
#include "tests/fuzz/fuzz_temp_file.h"
#include "weights/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static pola::fuzz::TempFile in(".npy");
  static pola::fuzz::TempFile again(".npy");
  in.write(data, size);
  pola::io::NpyArray a;
  try {
    a = pola::io::read_npy(in.path());
  } catch (const pola::InputError &) {
    return 0;
  }
  pola::io::write_npy(again.path(), a.shape, a.data.data());
  const pola::io::NpyArray b = pola::io::read_npy(again.path());
  // Bitwise comparison: NaN payloads must survive too.
  if (a.shape != b.shape || a.data.size() != b.data.size() ||
      (!a.data.empty() && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) != 0))
    std::abort();
  return 0;
}
