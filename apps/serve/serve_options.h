// The settings of `pola serve` (apps/cmd_serve.cpp parses them).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pola::serve {

struct ServeOptions {
  std::vector<std::pair<std::string, std::string>> models;  // (name, path)
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 0;          // engine threads per model run; 0 = all cores
  int precision = 0;        // a pola_precision (--precision fp32|bf16|int8|auto)
  int max_batch = 16;       // images per engine call
  double max_wait_ms = 2;   // how long a request waits for others to batch with
  // --batch-policy fixed: always wait max_wait_ms (adaptive: for arriving
  // requests and the previous batch's size, see model_batcher.h)
  bool fixed_wait = false;
  int max_queue = 256;      // images waiting per model; beyond: 503
  double max_body_mb = 32;  // request body limit; beyond: 413
  std::string api_key_file; // when set, every request needs "Authorization: Bearer <key>"
  bool probes_need_key = false;  // false: /v2/health/* answer without the key (orchestrators' probes send none)
  int http_threads = 64;    // requests served at once (each with all of its bytes received)
  int max_connections = 1024;  // open connections; past it the longest-waiting idle or stalled one is closed
  int timeout_s = 10;       // how long a request may take to arrive (from its first byte), an idle connection
                            // may stay open, and a write may wait
  bool verbose = false;
};

// Loads the models, serves until SIGTERM or SIGINT, then stops accepting,
// answers what is in flight and returns. Throws polaformer::InputError for a
// bad model, key file or address.
void run_server(const ServeOptions &options);

} // namespace pola::serve
