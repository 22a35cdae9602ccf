// Library-wide entry points: versions, defaults, the last error.
#include "last_error.h"
#include "polaformer/polaformer.h"

extern "C" {

POLA_API pola_options pola_default_options(void) {
  pola_options o;
  o.threads = 0;
  o.allow_nonfinite = 0;
  o.precision = POLA_PRECISION_FP32;
  return o;
}

POLA_API const char *pola_version(void) { return POLA_LIBRARY_VERSION; }

POLA_API int pola_abi_version(void) { return POLA_ABI_VERSION; }

POLA_API const char *pola_last_error(void) { return pola::api::last_error(); }

POLA_API const char *pola_last_error_function(void) { return pola::api::last_error_function(); }

} // extern "C"
