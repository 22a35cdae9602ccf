// The boundary between `pola` and its HTTP plugin, libpola_http.so (the
// server and the load generator, apps/serve/). `pola` loads it only for
// `pola serve` and `pola bench-serve`, so every other command starts without
// cpp-httplib and the OpenSSL it links: 3.7 MB less resident memory in every
// run, and four fewer libraries on an edge device that does not serve.
// The plugin is built with `pola`, from the same sources and compiler, and
// finds the C API in `pola` itself: the C++ types here are no stable ABI.
#pragma once

#include <string>

#include "serve/load_generator.h"
#include "serve/serve_options.h"

namespace pola::serve {

// How an entry point ended: `error` empty when it succeeded; `input_error`
// when the failure is the caller's (a bad model, key file or address).
struct PluginStatus {
  std::string error;
  bool input_error = false;
};

// `pola bench-serve`'s report, rendered by the plugin (the report's code lives there).
struct LoadResult {
  std::string json, text;
  int failed = 0;
};

} // namespace pola::serve

extern "C" {
// Serves until SIGTERM or SIGINT (serve_options.h).
void pola_http_serve(const pola::serve::ServeOptions *options, pola::serve::PluginStatus *status);
// Runs the closed-loop load (load_generator.h).
void pola_http_load(const pola::serve::LoadOptions *options, pola::serve::LoadResult *result,
                    pola::serve::PluginStatus *status);
}
