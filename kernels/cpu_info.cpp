#include "kernels/cpu_info.h"

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace pola::kernels {

const char *const kCpuFeaturesOfInterest[] = {"avx2",        "fma",         "avx512f",  "avx512bw",
                                              "avx512vl",    "avx512_vnni", "avx512_bf16", "avx512_fp16",
                                              "amx_tile",    "amx_bf16",    "amx_int8", nullptr};

namespace {

CpuInfo read_cpu_info() {
  CpuInfo info;
  info.model = "unknown";
  info.logical_cores = int(std::thread::hardware_concurrency());
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  bool have_model = false, have_flags = false;
  std::string family, model_number; // "cpu family" / "model": the generation a bare "AMD EPYC" hides
  for (std::string line; std::getline(in, line) && !(have_model && have_flags);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    if (key == "model name" && !have_model) {
      info.model = value;
      have_model = true;
    } else if (key == "cpu family" && family.empty()) {
      family = value;
    } else if (key == "model" && model_number.empty()) {
      model_number = value;
    } else if (key == "flags" && !have_flags) {
      std::istringstream words(value);
      for (std::string w; words >> w;) flags.insert(w);
      have_flags = true;
    }
  }
  if (!family.empty() && !model_number.empty())
    info.model += " (family " + family + " model " + model_number + ")";
  for (int i = 0; kCpuFeaturesOfInterest[i]; ++i)
    if (flags.count(kCpuFeaturesOfInterest[i])) info.features.emplace_back(kCpuFeaturesOfInterest[i]);
  return info;
}

} // namespace

const CpuInfo &cpu_info() {
  static const CpuInfo info = read_cpu_info();
  return info;
}

std::string cpu_summary() {
  const CpuInfo &c = cpu_info();
  std::string s = c.model + ", " + std::to_string(c.logical_cores) + " cores, ISA:";
  for (const auto &f : c.features) s += " " + f;
  return s;
}

} // namespace pola::kernels
