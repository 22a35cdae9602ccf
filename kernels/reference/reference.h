// Plain scalar loops, one op per file: the test oracle for every SIMD kernel
// and the path used on CPUs without AVX2. Same signatures as KernelTable.
#pragma once

#include "kernels/kernels.h"

namespace pola::kernels::reference {

void layernorm(const float *x, int64_t ld_x, float *y, int64_t ld_y, int64_t rows, int64_t cols,
               const float *gamma, const float *beta, float eps, int threads);
void gelu(float *x, int64_t n, int threads);
void mul_rows(float *y, int64_t ld_y, const float *g, int64_t ld_g, int64_t rows, int64_t cols,
              int threads);
void pola_attention(const PolaAttnArgs &args);
void window_attention(const WindowAttnArgs &args);
void to_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads);
void layernorm_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols,
                    const float *gamma, const float *beta, float eps, int threads);
void gelu_bf16(const float *x, int64_t ld_x, uint16_t *y, int64_t ld_y, int64_t rows, int64_t cols, int threads);
void abs_pow(const float *u, const float *p, float *y, int64_t n);

// The scalar KernelTable (isa == Isa::scalar).
const KernelTable &table();

} // namespace pola::kernels::reference
