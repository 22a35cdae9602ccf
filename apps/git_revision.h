// The git commit the binaries were built from (cmake/git_revision.cmake makes
// the definition at every build): "<short hash>", "<short hash>-dirty" or "unknown".
#pragma once

namespace pola::app {
const char *git_revision();
} // namespace pola::app
