#include "last_error.h"

namespace pola::api {
namespace {
thread_local std::string g_last_error;
thread_local const char *g_last_function = "";
} // namespace

void set_last_error(const char *function, std::string message) {
  g_last_error = std::move(message);
  g_last_function = function ? function : "";
}

const char *last_error() { return g_last_error.c_str(); }

const char *last_error_function() { return g_last_function; }

} // namespace pola::api
