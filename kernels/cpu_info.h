// What CPU this is, for benchmark results: machines differ between runs
// (AMD Zen 5 without AMX, Intel Xeon with AMX), so every figure we record
// names the CPU model, the core count and the ISA extensions that matter to
// the kernels. Descriptive only: dispatch decisions use cpu_supports().
#pragma once

#include <string>
#include <vector>

namespace pola::kernels {

struct CpuInfo {
  // /proc/cpuinfo "model name" (or "unknown") and, where given, its "cpu
  // family" and "model" numbers: a VM may name Zen 4 and Zen 5 both "AMD EPYC"
  // (family 25 and 26), which differ in 512-bit width and cache sizes.
  std::string model;
  int logical_cores = 0;             // what the process may use
  std::vector<std::string> features; // of kCpuFeaturesOfInterest, those the OS reports
};

// The flags (Linux /proc/cpuinfo spelling) that decide which kernels and
// oneDNN paths can run: vector width, FMA, bf16/fp16 dot products, AMX tiles.
extern const char *const kCpuFeaturesOfInterest[];

const CpuInfo &cpu_info(); // read once

// "MODEL, N cores, ISA: avx2 fma avx512f ..." on one line.
std::string cpu_summary();

} // namespace pola::kernels
