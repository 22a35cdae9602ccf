// What this CPU and OS support according to the kernel's /proc/cpuinfo: a
// source independent of the dispatch code under test (CPUID and XGETBV in
// kernels/isa_x86.cpp). Linux lists a feature's flag only when it also
// enables its register state, so the flags are what dispatch must find.
#pragma once

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace pola::test {

struct CpuinfoFeatures {
  bool readable = false;
  bool avx2 = false, avx512 = false, avx512_bf16 = false, amx_bf16 = false;
};

inline CpuinfoFeatures cpuinfo_features(const char *path = "/proc/cpuinfo") {
  CpuinfoFeatures f;
  std::ifstream in(path);
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.compare(0, 5, "flags") != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    f.readable = true;
    break;  // the first processor's; the cores of one machine agree
  }
  auto has = [&](const char *flag) { return flags.count(flag) > 0; };
  f.avx2 = has("avx") && has("avx2") && has("fma");
  f.avx512 = f.avx2 && has("avx512f") && has("avx512dq") && has("avx512bw") && has("avx512vl");
  f.avx512_bf16 = f.avx512 && has("avx512_bf16");
  f.amx_bf16 = f.avx512 && has("amx_tile") && has("amx_bf16");
  return f;
}

} // namespace pola::test
