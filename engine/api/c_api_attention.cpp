// The attention core alone through the C API: argument checks, then the
// fp32 polarity core the kernel registry resolves (kernels/registry.h).
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "guarded_call.h"
#include "kernels/registry.h"
#include "kernels/large_buffer.h"

using pola::api::guarded_call;
using pola::api::require;

namespace {

constexpr int kMaxHeadDim = 1024; // bounds the per-call state (~33 * heads * 2 * d * d floats)

[[noreturn]] void bad(const std::string &what) { throw pola::InputError(what); }

// Byte range [first, end) of `rows` rows of `width` floats at stride ld;
// rows == 0 is empty. Checks that the last element's index fits int64.
struct Span {
  std::uintptr_t first = 0, end = 0;
};
Span rows_span(const float *p, long long rows, long long ld, long long width, const char *name) {
  if (rows == 0) return {};
  if (!p) bad(std::string(name) + " must not be NULL");
  long long last = 0;
  if (__builtin_mul_overflow(rows - 1, ld, &last) || __builtin_add_overflow(last, width, &last) ||
      last > (1LL << 60) / (long long)sizeof(float))
    bad(std::string(name) + ": " + std::to_string(rows) + " rows of stride " + std::to_string(ld) +
        " do not fit in memory");
  const auto first = reinterpret_cast<std::uintptr_t>(p);
  return {first, first + std::uintptr_t(last) * sizeof(float)};
}

bool overlap(const Span &a, const Span &b) { return a.first < b.end && b.first < a.end; }

// A stride: 0 means dense rows; otherwise at least the row width.
long long stride(long long ld, long long width, const char *name) {
  if (ld == 0) return width;
  if (ld < width)
    bad(std::string(name) + " = " + std::to_string(ld) + " is less than heads * head_dim = " + std::to_string(width));
  return ld;
}

void check_channels(const pola_attention_args &a, long long width) {
  if (!a.inv_scale) bad("inv_scale must not be NULL");
  if (!a.power) bad("power must not be NULL");
  for (long long c = 0; c < width; ++c) {
    if (!std::isfinite(a.inv_scale[c])) bad("inv_scale[" + std::to_string(c) + "] is not finite");
    if (!(a.power[c] > 0.0f) || !std::isfinite(a.power[c]))
      bad("power[" + std::to_string(c) + "] = " + std::to_string(a.power[c]) + " is not a finite positive number");
  }
}

void run_attention(const pola_attention_args &a) {
  if (a.n_q < 0 || a.n_k < 0) bad("n_q and n_k must be >= 0");
  if (a.heads < 1) bad("heads must be >= 1, got " + std::to_string(a.heads));
  if (a.head_dim < 1 || a.head_dim > kMaxHeadDim)
    bad("head_dim must be in 1.." + std::to_string(kMaxHeadDim) + ", got " + std::to_string(a.head_dim));
  if (a.threads < 0) bad("threads must be >= 0 (0 = all cores)");
  const long long width = (long long)a.heads * a.head_dim;
  if (width > (1LL << 31)) bad("heads * head_dim = " + std::to_string(width) + " is too large");
  const long long ld_q = stride(a.ld_q, width, "ld_q"), ld_k = stride(a.ld_k, width, "ld_k"),
                  ld_v = stride(a.ld_v, width, "ld_v"), ld_out = stride(a.ld_out, width, "ld_out");
  const Span q = rows_span(a.q, a.n_q, ld_q, width, "q"), k = rows_span(a.k, a.n_k, ld_k, width, "k"),
             v = rows_span(a.v, a.n_k, ld_v, width, "v"), out = rows_span(a.out, a.n_q, ld_out, width, "out"),
             bias = a.key_bias ? rows_span(a.key_bias, a.n_k, width, width, "key_bias") : Span{};
  if (overlap(out, q) || overlap(out, k) || overlap(out, v) || overlap(out, bias))
    bad("out overlaps q, k, v or key_bias (the core reads its inputs after writing some output)");
  check_channels(a, width);
  if (a.n_q == 0) return;

  pola::kernels::PolarityAttnArgs p;
  p.n_q = a.n_q;
  p.n_k = a.n_k;
  p.heads = a.heads;
  p.head_dim = a.head_dim;
  p.q = a.q;
  p.ld_q = ld_q;
  p.k = a.n_k ? a.k : nullptr;
  p.ld_k = ld_k;
  p.v = a.n_k ? a.v : nullptr;
  p.ld_v = ld_v;
  p.pos_enc = a.n_k ? a.key_bias : nullptr;
  p.inv_scale = a.inv_scale;
  p.feature = pola::kernels::FeatureMap{pola::kernels::FeatureKind::abs_pow, a.power};
  p.out = a.out;
  p.ld_out = ld_out;
  p.threads = a.threads > 0 ? a.threads : omp_get_max_threads();  // as a model's threads = 0
  pola::kernels::resolve<pola::kernels::Op::polarity_attention, pola::DType::f32>(p).fn(p);
}

} // namespace

extern "C" {

POLA_API pola_attention_args pola_default_attention_args(void) {
  pola_attention_args a;
  a.n_q = a.n_k = 0;
  a.heads = a.head_dim = 0;
  a.q = a.k = a.v = nullptr;
  a.ld_q = a.ld_k = a.ld_v = 0;
  a.key_bias = nullptr;
  a.inv_scale = a.power = nullptr;
  a.out = nullptr;
  a.ld_out = 0;
  a.threads = 0;
  return a;
}

POLA_API pola_status pola_attention(const pola_attention_args *args) {
  return guarded_call("pola_attention", [&] {
    require(args != nullptr, "args must not be NULL");
    run_attention(*args);
  });
}

POLA_API float *pola_alloc_floats(size_t count) {
  float *p = nullptr;
  const pola_status status = guarded_call("pola_alloc_floats", [&] {
    require(count > 0, "count must be >= 1");
    p = pola::kernels::alloc_large_floats(count);
  });
  return status == POLA_OK ? p : nullptr;
}

POLA_API void pola_free_floats(float *p) { pola::kernels::free_large_floats(p); }

} // extern "C"
