// `pola bench-serve`: closed-loop load on a running `pola serve`
// (apps/serve/load_generator.h, run in the HTTP plugin).
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "command.h"
#include "http_plugin_loader.h"
#include "serve/load_generator.h"
#include "weights/error.h"

namespace {

pola::app::RegisterCommand register_bench_serve([](CLI::App &root) {
  auto o = std::make_shared<pola::serve::LoadOptions>();
  auto as_json = std::make_shared<bool>(false);
  auto *c = root.add_subcommand("bench-serve", "Closed-loop load on a `pola serve`: throughput, latency, batch sizes");
  c->footer("Each of --concurrency clients keeps one connection and sends its next request when the previous\n"
            "answer arrives, --requests in all (after --warmup). With --image, POST /v2/models/MODEL/classify with\n"
            "that file; without, /infer with one random image as a binary tensor. Also reports the server's mean time\n"
            "per request in each phase (its /metrics) and the CPU per request of the server and of this load generator.\n"
            "Example: pola bench-serve --url http://127.0.0.1:8080 --model fashion --image a.png --concurrency 16");
  c->add_option("--url", o->url, "Server address (http://HOST:PORT)");
  c->add_option("--model,-m", o->model, "Model name on the server")->required();
  c->add_option("--image,-i", o->image, "Image file to classify (default: /infer with a random tensor)");
  c->add_option("--concurrency,-c", o->concurrency, "Clients at once")->check(CLI::Range(1, 1024));
  c->add_option("--requests,-n", o->requests, "Requests timed")->check(CLI::Range(1, 10000000));
  c->add_option("--warmup", o->warmup, "Requests sent first and not timed")->check(CLI::Range(0, 1000000));
  c->add_option("--api-key-file", o->api_key_file, "File holding the server's API key");
  c->add_flag("--json", *as_json, "One JSON object instead of the text report");
  c->callback([o, as_json] {
    pola::serve::LoadResult r;
    pola::serve::PluginStatus status;
    pola::app::http_plugin().load(o.get(), &r, &status);
    pola::app::rethrow(status);
    if (*as_json) {
      auto j = nlohmann::json::parse(r.json);
      j["concurrency"] = o->concurrency;
      j["model"] = o->model;
      j["endpoint"] = o->image.empty() ? "infer" : "classify";
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::fputs(r.text.c_str(), stdout);
    }
    if (r.failed > 0) throw pola::InputError(std::to_string(r.failed) + " requests failed");
  });
});

} // namespace
