// The C boundary: runs a piece of C++ and turns every exception into a status
// code plus a per-thread message, so nothing ever unwinds into C callers.
// `function` is the public function being called (a string literal): it goes
// to pola_last_error_function(), never into the message.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "last_error.h"
#include "polaformer/polaformer.h"
#include "weights/error.h"

namespace pola::api {

template <class F> pola_status guarded_call(const char *function, F &&body) noexcept {
  try {
    body();
    return POLA_OK;
  } catch (const pola::InputError &e) {
    set_last_error(function, e.what());
    return POLA_ERROR_INPUT;
  } catch (const std::bad_alloc &) {
    set_last_error(function, "out of memory");
    return POLA_ERROR_INTERNAL;
  } catch (const std::exception &e) {
    set_last_error(function, std::string("internal error: ") + e.what());
    return POLA_ERROR_INTERNAL;
  } catch (...) {
    set_last_error(function, "internal error: unknown exception");
    return POLA_ERROR_INTERNAL;
  }
}

// An argument the caller got wrong (NULL pointer, negative count): InputError.
inline void require(bool ok, const char *what) {
  if (!ok) throw pola::InputError(what);
}

} // namespace pola::api
