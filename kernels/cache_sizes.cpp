#include "kernels/cache_sizes.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
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
    return parse_cache_size(read("size").c_str());
  }
  return 0;
}

struct L1d {
  int64_t bytes = 0;
  std::string forced; // the POLA_L1D_BYTES text that set bytes, or empty
};

L1d detect_l1d() {
  if (const char *forced = std::getenv("POLA_L1D_BYTES")) {
    if (const int64_t bytes = parse_cache_size(forced)) return {bytes, forced};
    std::fprintf(stderr,
                 "pola: POLA_L1D_BYTES=%s is not a size between 1K and 1024M (bytes, or with a K or M suffix); "
                 "using the detected L1d size\n",
                 forced);
  }
  const long sc = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (sc > 0) return {sc, {}};
  const int64_t fs = l1d_from_sysfs();
  return {fs > 0 ? fs : kFallbackL1dBytes, {}};
}

const L1d &l1d() {
  static const L1d cache = detect_l1d();
  return cache;
}

} // namespace

int64_t parse_cache_size(const char *text) {
  if (!text || *text < '0' || *text > '9') return 0;
  errno = 0;
  char *end = nullptr;
  const long long n = std::strtoll(text, &end, 10);
  if (errno != 0 || n <= 0) return 0;
  int64_t unit = 1;
  if (*end == 'K' || *end == 'k') unit = 1024, ++end;
  else if (*end == 'M' || *end == 'm') unit = 1024 * 1024, ++end;
  while (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r') ++end;
  if (*end != 0 || n > (int64_t(1) << 30) / unit) return 0;
  const int64_t bytes = n * unit;
  return bytes >= 1024 ? bytes : 0;
}

int64_t l1d_bytes() { return l1d().bytes; }

const char *l1d_override() { return l1d().forced.empty() ? nullptr : l1d().forced.c_str(); }

} // namespace pola::kernels
