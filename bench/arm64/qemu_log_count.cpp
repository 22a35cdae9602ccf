// Guest instructions retired, from a qemu-user `-d in_asm,exec,nochain` log
// on stdin: each translated block's listing (after "IN:") gives its length,
// each "Trace" line is one execution of the block at the guest PC it names;
// the total is the sum of the lengths over the executions. The same rule as
// count_from_log() in count_instructions.py, compiled because a model the
// size of pvt_tiny logs billions of lines. Prints the total.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace {

// The guest PC of "Trace 0: 0xHOST [cs_base/PC/flags/cflags] ...": the field after the first '/'.
bool trace_pc(const char *line, uint64_t &pc) {
  const char *open = std::strchr(line, '[');
  if (!open) return false;
  const char *slash = std::strchr(open, '/');
  if (!slash) return false;
  pc = std::strtoull(slash + 1, nullptr, 16);
  return true;
}

} // namespace

int main() {
  std::unordered_map<uint64_t, uint64_t> length;
  length.reserve(1 << 20);
  uint64_t total = 0, block_pc = 0, block_len = 0;
  bool in_block = false, have_pc = false;
  static char line[1 << 16];
  while (std::fgets(line, sizeof line, stdin)) {
    if (std::strncmp(line, "Trace ", 6) == 0) {
      uint64_t pc;
      if (trace_pc(line, pc)) {
        const auto it = length.find(pc);
        if (it != length.end()) total += it->second;
      }
    } else if (std::strncmp(line, "IN:", 3) == 0) {
      in_block = true, have_pc = false, block_len = 0;
    } else if (in_block) {
      if (line[0] == '0' && line[1] == 'x') {
        if (!have_pc) block_pc = std::strtoull(line, nullptr, 16), have_pc = true;
        ++block_len;
      } else if (have_pc && (line[0] == '\n' || line[0] == '\0')) {
        length[block_pc] = block_len;
        in_block = false;
      }
    }
  }
  std::printf("%llu\n", static_cast<unsigned long long>(total));
  return 0;
}
