// Plain scalar loops, one op per file: the test oracle for every SIMD kernel,
// and for the fp32 ops (and the rounded-output bf16 ones) the path used on
// CPUs without AVX2. Registered under Isa::scalar (registry.cpp); the names
// follow the registry's rule: _bf16 = keyed bf16.
#pragma once

#include "kernels/attention_args.h"
#include "kernels/gemm_bf16.h"

namespace pola::kernels::reference {

void layernorm(const float *x, int64_t ld_x, float *y, int64_t ld_y, int64_t rows, int64_t cols,
               const float *gamma, const float *beta, float eps, int threads);
void layernorm_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                    const float *gamma, const float *beta, float eps, int threads);
void gelu(float *x, int64_t n, int threads);
void gelu_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads);
void mul_rows(float *y, int64_t ld_y, const float *g, int64_t ld_g, int64_t rows, int64_t cols,
              int threads);
void to_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads);
void quantize_s8(const float *x, int64_t ld_x, int8_t *y, int64_t ld_y, int64_t rows, int64_t cols, float scale,
                 int threads);
void abs_pow(const float *u, const float *p, float *y, int64_t n);
void polarity_attention(const PolarityAttnArgs &args);
void polarity_attention_bf16(const PolarityAttnArgs &args);
// polarity_attention's exp_sigmoid map (with RoPE): polarity_attention_rope.cpp.
void polarity_attention_exp_sigmoid(const PolarityAttnArgs &args);
void window_attention(const WindowAttnArgs &args);
void window_attention_bf16(const WindowAttnArgs &args);
void softmax_attention(const GlobalAttnArgs &args);
void depthwise_conv(const DepthwiseConvArgs &args);
void swish(float *x, int64_t n, int threads);
// (gemm_bf16: declared in kernels/gemm_bf16.h.)

// The scalar feature map f(relu(x)) of m (attention_args.h), per channel:
// the polarity references' phi. Refuses an unknown kind.
struct ScalarFeature {
  FeatureMap map;
  explicit ScalarFeature(const FeatureMap &m);
  float operator()(float x, int64_t channel) const;
};

} // namespace pola::kernels::reference
