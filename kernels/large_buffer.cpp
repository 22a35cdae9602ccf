#include "kernels/large_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>

namespace pola::kernels {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Written just below the aligned start, inside the mapping, so free needs
// only the pointer the caller holds.
struct MappingHeader {
  void *base;
  std::size_t length;
};

} // namespace

float *alloc_large_floats(std::size_t count) {
  if (count == 0 || count > (SIZE_MAX - 2 * kHugePage) / sizeof(float)) throw std::bad_alloc();
  const std::size_t bytes = count * sizeof(float);
  // Room for the header before a 2 MB boundary, and for rounding the end up
  // to whole huge pages (the advice covers whole pages only).
  const std::size_t length = kHugePage + (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void *base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  const auto start = (reinterpret_cast<std::uintptr_t>(base) + sizeof(MappingHeader) + kHugePage - 1) &
                     ~std::uintptr_t(kHugePage - 1);
  // Advice only: failure (THP compiled out) leaves ordinary pages.
  madvise(reinterpret_cast<void *>(start), (bytes + kHugePage - 1) / kHugePage * kHugePage, MADV_HUGEPAGE);
  const MappingHeader header{base, length};
  std::memcpy(reinterpret_cast<void *>(start - sizeof(MappingHeader)), &header, sizeof header);
  return reinterpret_cast<float *>(start);
}

void free_large_floats(float *p) {
  if (!p) return;
  MappingHeader header;
  std::memcpy(&header, reinterpret_cast<const char *>(p) - sizeof(MappingHeader), sizeof header);
  munmap(header.base, header.length);
}

long long resident_huge_page_bytes() {
  std::FILE *f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long long kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "AnonHugePages: %lld kB", &kb) == 1) break;
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

} // namespace pola::kernels
