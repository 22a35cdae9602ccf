// `pola`'s side of the HTTP plugin (serve/http_plugin.h): loaded on first use.
#pragma once

#include "serve/http_plugin.h"

namespace pola::app {

struct HttpPlugin {
  decltype(&pola_http_serve) serve = nullptr;
  decltype(&pola_http_load) load = nullptr;
};

// libpola_http.so from beside the running `pola` (the build tree) or from
// ../lib (an install or bundle); throws pola::InputError naming the places
// tried and why it could not be loaded.
const HttpPlugin &http_plugin();

// Throws what `status` reports: pola::InputError for the caller's mistakes,
// std::runtime_error for the rest.
void rethrow(const pola::serve::PluginStatus &status);

} // namespace pola::app
