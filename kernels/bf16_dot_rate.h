// How fast this CPU's AVX512-BF16 dot products run against its fp32 FMAs.
// Whether bf16 pays off without AMX is a property of the core, not of the
// ISA flag: vdpbf16ps does two multiply-adds per fp32 lane, which doubles the
// rate only where it issues as fast as an FMA (AMD EPYC Zen 4, where bf16
// models ran faster than fp32), while on an Intel Xeon without AMX (family 6
// model 207) it issues more slowly and bf16 models ran slower than fp32
// (figures: bench/peers/README.md). `--precision auto` asks this instead of
// the CPU's vendor.
#pragma once

namespace pola::kernels {

// Multiply-adds per second of vdpbf16ps over those of vfmadd231ps, both on
// 512-bit registers, one thread, no memory traffic: ~2 where the two issue
// at the same rate. 0 when the CPU or OS lacks AVX512-BF16 (not the POLA_ISA
// cap: callers decide whether bf16 is allowed). Measured once (< 1 ms, best of
// several interleaved runs after a warm-up), thread-safe.
double bf16_dot_speedup();

} // namespace pola::kernels
