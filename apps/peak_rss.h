// The process's peak resident memory, as the benchmarks report it.
#pragma once

#include <sys/resource.h>

namespace pola::app {

// Peak RSS so far in MB (getrusage's ru_maxrss is in KiB on Linux).
inline double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

} // namespace pola::app
