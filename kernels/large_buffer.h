// Float arrays for sequences far larger than the caches (the attention
// core's q, k, v and out at long N), laid out for streaming: 2 MB aligned and
// advised to the kernel as transparent huge pages (MADV_HUGEPAGE).
//
// Why: a token row of 8 heads x 64 floats is 2 KB, so on 4 KB pages the core
// crosses a page every two tokens. The hardware prefetchers stop at page
// boundaries and every page costs a TLB walk; on 2 MB pages the same passes
// ran faster (figures: bench/attention/README.md).
// Where the system disallows huge pages (THP "never") the advice is ignored
// and the memory is ordinary pages, equally correct.
#pragma once

#include <cstddef>

namespace pola::kernels {

// An uninitialised array of `count` floats (count >= 1), aligned to 2 MB and
// advised as huge pages. Throws std::bad_alloc when the system refuses.
// Release with free_large_floats.
float *alloc_large_floats(std::size_t count);

// Releases an array from alloc_large_floats; null is allowed.
void free_large_floats(float *p);

// Bytes of this process's anonymous memory currently backed by huge pages
// (AnonHugePages of /proc/self/smaps_rollup), or -1 when unknown.
long long resident_huge_page_bytes();

} // namespace pola::kernels
