// Shared test helpers: the ISAs to test, seeded random data, strided buffers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "kernels/registry.h"

namespace pola::test {

constexpr double kEps32 = std::numeric_limits<float>::epsilon();

// The CPU feature one run of the kernel tests is about: POLA_TEST_FEATURE =
// scalar|avx2|avx512|avx512_bf16|amx_bf16 (unset: every feature this machine
// has). CTest runs one entry per feature, and main() ends an entry whose
// feature this CPU lacks with exit 77 before any test runs: a lost ISA is
// reported as skipped, never as passed.
#if defined(__aarch64__)
// On aarch64 the one SIMD feature is neon64 (the ARMv8-A baseline); the x86
// names stay so the tests that name them compile (never detected there).
enum class Feature { all, scalar, avx2, avx512, avx512_bf16, amx_bf16, neon64 };
#else
enum class Feature { all, scalar, avx2, avx512, avx512_bf16, amx_bf16 };
#endif

inline const char *feature_name(Feature f) {
  switch (f) {
  case Feature::all: return "all";
  case Feature::scalar: return "scalar";
  case Feature::avx2: return "avx2";
  case Feature::avx512: return "avx512";
  case Feature::avx512_bf16: return "avx512_bf16";
  case Feature::amx_bf16: return "amx_bf16";
#if defined(__aarch64__)
  case Feature::neon64: return "neon64";
#endif
  }
  return "?";
}

// The feature named by POLA_TEST_FEATURE; false for a name that is none.
inline bool parse_feature(Feature &out) {
  const char *s = std::getenv("POLA_TEST_FEATURE");
  out = Feature::all;
  if (!s || !*s) return true;
#if defined(__aarch64__)
  for (Feature f : {Feature::scalar, Feature::neon64})
#else
  for (Feature f : {Feature::scalar, Feature::avx2, Feature::avx512, Feature::avx512_bf16, Feature::amx_bf16})
#endif
    if (!std::strcmp(s, feature_name(f))) {
      out = f;
      return true;
    }
  return false;
}

inline Feature test_feature() {
  static const Feature f = [] {
    Feature g;
    parse_feature(g);
    return g;
  }();
  return f;
}

// Whether this run checks the kernels of feature f.
inline bool covers(Feature f) { return test_feature() == Feature::all || test_feature() == f; }

// Whether this CPU and OS have f, as dispatch detected it.
inline bool detected(Feature f) {
  using namespace kernels;
  switch (f) {
  case Feature::all:
  case Feature::scalar: return true;
  case Feature::avx2: return cpu_supports(Isa::avx2);
  case Feature::avx512: return cpu_supports(Isa::avx512);
  case Feature::avx512_bf16: return cpu_supports(Isa::avx512_bf16);
  case Feature::amx_bf16: return cpu_supports(Isa::amx_bf16);
#if defined(__aarch64__)
  case Feature::neon64: return cpu_supports(Isa::neon64);
#endif
  }
  return false;
}

inline Feature feature_of(kernels::Isa isa) {
  switch (isa) {
  case kernels::Isa::scalar: return Feature::scalar;
  case kernels::Isa::avx2: return Feature::avx2;
  case kernels::Isa::avx512: return Feature::avx512;
  case kernels::Isa::avx512_bf16: return Feature::avx512_bf16;
  case kernels::Isa::amx_bf16: return Feature::amx_bf16;
#if defined(__aarch64__)
  case kernels::Isa::neon64: return Feature::neon64;
#endif
  }
  return Feature::all;
}

// The registry's entries of one ISA for the ops every ISA up to avx512 has
// (the fp32 ones and the bf16-output ones), looked up by exact key.
struct IsaKernels {
  kernels::Isa isa;
  kernels::KernelFn<kernels::Op::layernorm, DType::f32> layernorm;
  kernels::KernelFn<kernels::Op::layernorm, DType::bf16> layernorm_bf16;
  kernels::KernelFn<kernels::Op::gelu, DType::f32> gelu;
  kernels::KernelFn<kernels::Op::gelu, DType::bf16> gelu_bf16;
  kernels::KernelFn<kernels::Op::mul_rows, DType::f32> mul_rows;
  kernels::KernelFn<kernels::Op::to_bf16, DType::bf16> to_bf16;
  kernels::KernelFn<kernels::Op::quantize, DType::s8> quantize_s8;
  kernels::KernelFn<kernels::Op::abs_pow, DType::f32> abs_pow;
  kernels::KernelFn<kernels::Op::polarity_attention, DType::f32> polarity_attention;
  kernels::KernelFn<kernels::Op::window_attention, DType::f32> window_attention;
  kernels::KernelFn<kernels::Op::softmax_attention, DType::f32> softmax_attention;
  kernels::KernelFn<kernels::Op::depthwise_conv, DType::f32> depthwise_conv;
  kernels::KernelFn<kernels::Op::swish, DType::f32> swish;
};

// isa's kernels, or nullptr where this machine cannot run isa.
inline const IsaKernels *kernels_for(kernels::Isa isa) {
  using namespace kernels;
  static const auto make = [](Isa i) {
    return IsaKernels{i,
                      lookup<Op::layernorm, DType::f32>(i),
                      lookup<Op::layernorm, DType::bf16>(i),
                      lookup<Op::gelu, DType::f32>(i),
                      lookup<Op::gelu, DType::bf16>(i),
                      lookup<Op::mul_rows, DType::f32>(i),
                      lookup<Op::to_bf16, DType::bf16>(i),
                      lookup<Op::quantize, DType::s8>(i),
                      lookup<Op::abs_pow, DType::f32>(i),
                      lookup<Op::polarity_attention, DType::f32>(i),
                      lookup<Op::window_attention, DType::f32>(i),
                      lookup<Op::softmax_attention, DType::f32>(i),
                      lookup<Op::depthwise_conv, DType::f32>(i),
                      lookup<Op::swish, DType::f32>(i)};
  };
#if defined(__aarch64__)
  static const IsaKernels all[] = {make(Isa::scalar), make(Isa::neon64)};
#else
  static const IsaKernels all[] = {make(Isa::scalar), make(Isa::avx2), make(Isa::avx512)};
#endif
  for (const IsaKernels &k : all)
    if (k.isa == isa) return cpu_supports(isa) ? &k : nullptr;
  return nullptr;
}

// The ISAs whose kernels this run checks: the scalar references first, then
// the run's feature, or every ISA up to avx512 this machine runs when unset.
inline std::vector<const IsaKernels *> available_tables() {
  std::vector<const IsaKernels *> out;
#if defined(__aarch64__)
  for (auto isa : {kernels::Isa::scalar, kernels::Isa::neon64})
#else
  for (auto isa : {kernels::Isa::scalar, kernels::Isa::avx2, kernels::Isa::avx512})
#endif
    if (auto *t = kernels_for(isa); t && (isa == kernels::Isa::scalar || covers(feature_of(isa))))
      out.push_back(t);
  return out;
}

// For a test of feature f's kernels: whether to run it here. Outside its own
// run it is another entry's business; in its own run the feature is there
// (main() checked); by hand, without the feature, it says what it skipped.
// (Needs doctest.h included before this header.)
inline bool runs_feature(Feature f) {
  if (!covers(f)) return false;
  if (detected(f)) return true;
  MESSAGE("SKIPPED: this CPU/OS has no " << feature_name(f) << "; nothing checked");
  return false;
}

// Base seed: POLA_TEST_SEED replays a failure; tests print the seed they used.
inline uint64_t base_seed() {
  const char *s = std::getenv("POLA_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20250115u;
}

// A rows x cols matrix stored with stride ld >= cols; the gaps hold NaN so a
// kernel that reads past a row's width poisons its output.
struct Strided {
  int64_t rows, cols, ld;
  std::vector<float> data;
  Strided(int64_t r, int64_t c, int64_t extra)
      : rows(r), cols(c), ld(c + extra),
        data(size_t(r * (c + extra)), std::numeric_limits<float>::quiet_NaN()) {}
  float &at(int64_t r, int64_t c) { return data[size_t(r * ld + c)]; }
  float at(int64_t r, int64_t c) const { return data[size_t(r * ld + c)]; }
};

// Uniform in [lo, hi), with a fraction of exact zeros.
inline void fill(Strided &m, std::mt19937_64 &rng, float lo, float hi, double zero_frac = 0.0) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::uniform_real_distribution<double> z(0.0, 1.0);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) m.at(r, c) = z(rng) < zero_frac ? 0.0f : u(rng);
}

} // namespace pola::test
