// What `pola --version` prints: enough to reproduce a figure or a bug report.
#pragma once

#include <string>

namespace pola::app {

// Version, git revision, compiler, the kernel ISA chosen at start-up (and
// why, when POLA_ISA forced it), the oneDNN version. One line each.
std::string version_text();

} // namespace pola::app
