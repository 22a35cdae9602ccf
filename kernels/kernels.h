// The engine's hand-written kernels: everything a caller needs.
//
// Every kernel is an entry of one registry keyed by (op, dtype, ISA)
// (registry.h): each (op, dtype) has a scalar reference under Isa::scalar
// (kernels/reference/, the test oracle) and SIMD versions under the ISAs of
// the ladder in isa.h: one xsimd template per op (kernels/simd/) compiled
// once per ISA (kernels/isa/avx2.cpp, avx512.cpp), and the bf16 cores
// (simd/*bf16*.hpp) on AVX512-BF16 dot products (isa/avx512_bf16.cpp) and
// AMX tiles (isa/amx_bf16.cpp). resolve() picks the kernel to run, once,
// from the POLA_ISA-capped ISA (active_isa()), the CPU and the shape, and
// says which dtype and ISA it really runs in. A kernel knows nothing about
// models.
#pragma once

#include "kernels/attention_args.h"
#include "kernels/gemm_bf16.h"
#include "kernels/isa.h"
#include "kernels/registry.h"
