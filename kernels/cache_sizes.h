// Cache sizes of this CPU, for kernels whose best blocking depends on them
// (issue 20: choose from the cache sizes at run time, never from the vendor).
#pragma once

#include <cstdint>

namespace pola::kernels {

// Bytes of one core's L1 data cache: what the C library reports, else
// Linux's sysfs, else 32 KB (the smallest of the x86 cores we run on).
// Read once, thread-safe.
int64_t l1d_bytes();

} // namespace pola::kernels
