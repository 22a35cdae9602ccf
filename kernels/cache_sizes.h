// Cache sizes of this CPU, for kernels whose best blocking depends on them
// (chosen from the cache sizes at run time, never from the vendor).
#pragma once

#include <cstdint>

namespace pola::kernels {

// Bytes of one core's L1 data cache: POLA_L1D_BYTES if set to a valid size
// (to measure a blocking rule as if on another CPU), else what the C library
// reports, else Linux's sysfs, else 32 KB (the smallest of the x86 cores we
// run on). Read once, thread-safe; a bad POLA_L1D_BYTES is reported once on
// stderr and ignored.
int64_t l1d_bytes();

// The POLA_L1D_BYTES value that set l1d_bytes(), or null when the size was
// detected (unset, or a bad value that was ignored).
const char *l1d_override();

// A cache size written as bytes with an optional K or M suffix ("48K",
// "49152", "2M", trailing whitespace allowed), or 0 if the text is not one
// or lies outside [1 KB, 1 GB].
int64_t parse_cache_size(const char *text);

} // namespace pola::kernels
