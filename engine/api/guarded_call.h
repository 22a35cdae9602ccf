// The C boundary: runs a piece of C++ and turns every exception into a status
// code plus a per-thread message, so nothing ever unwinds into C callers.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "last_error.h"
#include "polaformer/polaformer.h"
#include "weights/error.h"

namespace pola::api {

template <class F> pola_status guarded_call(F &&body) noexcept {
  try {
    body();
    return POLA_OK;
  } catch (const pola::InputError &e) {
    set_last_error(e.what());
    return POLA_ERROR_INPUT;
  } catch (const std::bad_alloc &) {
    set_last_error("out of memory");
    return POLA_ERROR_INTERNAL;
  } catch (const std::exception &e) {
    set_last_error(std::string("internal error: ") + e.what());
    return POLA_ERROR_INTERNAL;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return POLA_ERROR_INTERNAL;
  }
}

// An argument the caller got wrong (NULL pointer, negative count): InputError.
inline void require(bool ok, const char *what) {
  if (!ok) throw pola::InputError(what);
}

} // namespace pola::api
