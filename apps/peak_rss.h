// The process's peak resident memory, as the benchmarks report it.
#pragma once

#include <sys/resource.h>

namespace pola::app {

// Peak RSS so far in bytes (getrusage's ru_maxrss is in KiB on Linux). Each
// benchmark divides it in the unit of the sizes it compares it with.
inline double peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;
}

} // namespace pola::app
