// Runs a fuzz target's LLVMFuzzerTestOneInput over files, without libFuzzer:
// every build (gcc or clang, sanitized or not) replays the seed corpus and the
// inputs of past crashes as an ordinary ctest test.
//   fuzz_replay_<target> FILE_OR_DIR...
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

void replay_file(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::printf("  %s (%zu bytes)\n", p.filename().c_str(), bytes.size());
  std::fflush(stdout); // so a crash report follows the name of its input
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
}

} // namespace

int main(int argc, char **argv) {
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (!std::filesystem::exists(arg)) continue; // e.g. no regressions recorded yet
    if (std::filesystem::is_directory(arg)) {
      for (const auto &e : std::filesystem::directory_iterator(arg))
        if (e.is_regular_file()) replay_file(e.path()), ++count;
    } else {
      replay_file(arg), ++count;
    }
  }
  std::printf("replayed %zu inputs\n", count);
  return 0;
}
