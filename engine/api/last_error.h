// The per-thread message behind pola_last_error(): each thread sees only the
// failures of its own calls, so concurrent users of one model never read each
// other's errors.
#pragma once

#include <string>

namespace pola::api {

void set_last_error(std::string message);
const char *last_error();

} // namespace pola::api
