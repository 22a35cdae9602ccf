// The per-thread message behind pola_last_error(), and the public function
// that failed (pola_last_error_function()): each thread sees only the
// failures of its own calls, so concurrent users of one model never read each
// other's errors. The message and the function are kept apart so the message
// can be shown to users of a binding or a server, who called no C function.
#pragma once

#include <string>

namespace pola::api {

void set_last_error(const char *function, std::string message);
const char *last_error();
const char *last_error_function();

} // namespace pola::api
