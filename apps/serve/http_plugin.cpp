// libpola_http.so's entry points (http_plugin.h): no exception leaves the plugin.
#include "serve/http_plugin.h"

#include <exception>

#include <polaformer/polaformer.hpp>

namespace {

template <class Body> void report_errors(pola::serve::PluginStatus *status, Body &&body) {
  try {
    body();
  } catch (const polaformer::InputError &e) {
    status->error = e.what();
    status->input_error = true;
  } catch (const std::exception &e) {
    status->error = e.what();
  } catch (...) {
    status->error = "an unknown error in the HTTP plugin";
  }
}

} // namespace

extern "C" void pola_http_serve(const pola::serve::ServeOptions *options, pola::serve::PluginStatus *status) {
  report_errors(status, [&] { pola::serve::run_server(*options); });
}

extern "C" void pola_http_load(const pola::serve::LoadOptions *options, pola::serve::LoadResult *result,
                               pola::serve::PluginStatus *status) {
  report_errors(status, [&] {
    const pola::serve::LoadReport r = pola::serve::run_load(*options);
    result->json = r.to_json().dump();
    result->text = r.to_text();
    result->failed = r.failed;
  });
}
