#include "kernels/cache_sizes.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

namespace pola::kernels {

namespace {

constexpr int64_t kFallbackL1dBytes = 32 * 1024;

// sysfs: the index whose level is 1 and type "Data" of cpu0, size like "48K".
int64_t l1d_from_sysfs() {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    auto read = [&](const char *name) {
      char buf[64] = {};
      if (FILE *f = std::fopen((dir + name).c_str(), "r")) {
        if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
        std::fclose(f);
      }
      return std::string(buf);
    };
    if (read("level").rfind("1", 0) != 0 || read("type").rfind("Data", 0) != 0) continue;
    const std::string size = read("size");
    char *end = nullptr;
    const long long n = std::strtoll(size.c_str(), &end, 10);
    if (n <= 0) return 0;
    return end && (*end == 'K' || *end == 'k') ? n * 1024 : end && *end == 'M' ? n * 1024 * 1024 : n;
  }
  return 0;
}

int64_t detect_l1d_bytes() {
  const long sc = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (sc > 0) return sc;
  const int64_t fs = l1d_from_sysfs();
  return fs > 0 ? fs : kFallbackL1dBytes;
}

} // namespace

int64_t l1d_bytes() {
  static const int64_t bytes = detect_l1d_bytes();
  return bytes;
}

} // namespace pola::kernels
