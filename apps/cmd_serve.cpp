// `pola serve`: an HTTP inference server (apps/serve/). This file only reads
// the command line; the server itself uses nothing but the public library and
// runs in the HTTP plugin (serve/http_plugin.h).
#include <cctype>
#include <memory>

#include "command.h"
#include "http_plugin_loader.h"
#include "precision_option.h"
#include "serve/serve_options.h"
#include "weights/error.h"

#include <polaformer/polaformer.h>

namespace {

std::pair<std::string, std::string> split_model(const std::string &spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw pola::InputError("--model " + spec + ": give NAME=PATH (the name goes into the URL: /v2/models/NAME/...)");
  const std::string name = spec.substr(0, eq);
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      throw pola::InputError("--model " + spec + ": a model name holds only letters, digits, '-', '_' and '.'");
  return {name, spec.substr(eq + 1)};
}

pola::app::RegisterCommand register_serve([](CLI::App &root) {
  auto o = std::make_shared<pola::serve::ServeOptions>();
  auto specs = std::make_shared<std::vector<std::string>>();
  auto policy = std::make_shared<std::string>("adaptive");
  auto precision = std::make_shared<pola::PrecisionRequest>(pola::PrecisionRequest::fp32);
  auto *c = root.add_subcommand("serve", "Serve models over HTTP (Open Inference Protocol / KServe v2), with dynamic batching");
  c->footer("Endpoints: GET /v2/health/live, /v2/health/ready, /v2/models/NAME, /v2/models/NAME/ready, /metrics;\n"
            "POST /v2/models/NAME/infer (FP32 NCHW tensor, JSON or binary), POST /v2/models/NAME/classify?top=K\n"
            "(image bytes; answers what `pola classify --json` prints). SIGTERM or SIGINT stop accepting, answer the\n"
            "requests in flight and exit 0. One access-log line per request goes to stderr.\n"
            "Example: pola serve --model fashion=models/fashion_pola_pvt.pola --port 8080");
  c->add_option("--model,-m", *specs, "NAME=PATH of a model file to serve (repeat for several)")->required();
  c->add_option("--host", o->host, "Address to listen on (0.0.0.0: every interface)");
  c->add_option("--port,-p", o->port, "TCP port")->check(CLI::Range(1, 65535));
  c->add_option("--threads,-t", o->threads, "Engine threads per model (0 = all cores)")->check(CLI::Range(0, 1024));
  c->add_option("--max-batch", o->max_batch, "Most images one engine call runs")->check(CLI::Range(1, 4096));
  c->add_option("--max-wait-ms", o->max_wait_ms, "Longest a request waits for others to batch with")
      ->check(CLI::Range(0.0, 10000.0));
  c->add_option("--batch-policy", *policy,
                "adaptive: a batch waits (up to --max-wait-ms once the model is free) for requests already being "
                "received and for as many images as the previous batch held plus those that arrived while it "
                "ran, so a lone request after a lone one runs at once; fixed: "
                "every batch waits --max-wait-ms for company")
      ->check(CLI::IsMember({"adaptive", "fixed"}));
  c->add_option("--max-queue", o->max_queue, "Most images waiting per model; more are refused with 503")
      ->check(CLI::Range(1, 1000000));
  c->add_option("--max-body-mb", o->max_body_mb, "Largest request body; larger ones get 413")
      ->check(CLI::Range(0.001, 4096.0));
  c->add_option("--api-key-file", o->api_key_file, "File holding a key every request must send as 'Authorization: Bearer KEY'");
  c->add_flag("--probes-need-key", o->probes_need_key,
              "With --api-key-file: the health probes (/v2/health/live, /ready) need the key too");
  c->add_option("--http-threads", o->http_threads,
                "Requests served at once; a request reaches a thread only once all of it has arrived")
      ->check(CLI::Range(1, 4096));
  c->add_option("--max-connections", o->max_connections,
                "Open connections at most; past it the longest-waiting idle or stalled one is closed")
      ->check(CLI::Range(16, 100000));
  c->add_option("--timeout", o->timeout_s,
                "Seconds a request may take to arrive (else 408) and an idle connection may stay open")
      ->check(CLI::Range(1, 3600));
  c->add_flag("--verbose,-v", o->verbose, "Every engine call (batch size, time) on stderr too");
  pola::app::add_precision_option(*c, *precision);
  c->callback([o, specs, policy, precision] {
    o->fixed_wait = *policy == "fixed";
    o->precision = *precision == pola::PrecisionRequest::bf16        ? POLA_PRECISION_BF16
                   : *precision == pola::PrecisionRequest::int8      ? POLA_PRECISION_INT8
                   : *precision == pola::PrecisionRequest::automatic ? POLA_PRECISION_AUTO
                                                                      : POLA_PRECISION_FP32;
    for (const auto &s : *specs) o->models.push_back(split_model(s));
    pola::serve::PluginStatus status;
    pola::app::http_plugin().serve(o.get(), &status);
    pola::app::rethrow(status);
  });
});

} // namespace
