// A bounded closed-loop load generator for `pola serve` (`pola bench-serve`):
// `concurrency` clients, each with its own keep-alive connection, send the
// next request as soon as their previous answer arrives: first `warmup`
// requests in all, untimed, then `requests`, timed. Reports throughput,
// latency percentiles, the batch sizes the server formed (its X-Pola-Batch
// answer header), where the server says the time went (its /metrics) and
// what the load generator itself cost in CPU.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace pola::serve {

struct LoadOptions {
  std::string url = "http://127.0.0.1:8080";
  std::string model;
  std::string image;         // classify this file's bytes; empty: /infer with a random tensor
  int concurrency = 1;
  int requests = 100;
  int warmup = 10;           // requests sent (and not counted) before timing
  std::string api_key_file;
};

struct LoadReport {
  int ok = 0, failed = 0;
  std::map<int, int> statuses;        // answers by HTTP status (0: no answer)
  double seconds = 0, requests_per_s = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, mean_ms = 0;
  std::map<int, int> batch_sizes;     // batch size -> answers
  // The server's own account of the timed requests (its /metrics): mean ms
  // per answered request in each phase, in the server's order (receive,
  // decode, queue, inference, handoff, encode, send); empty from a server
  // that does not report them.
  std::vector<std::pair<std::string, double>> server_phases_ms;
  // CPU time per request sent: this load generator's, and the server's
  // (process_cpu_seconds_total) when it reports it. On a machine whose cores
  // the two share, the client's CPU is taken from the server.
  double client_cpu_ms = 0;
  std::optional<double> server_cpu_ms;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

LoadReport run_load(const LoadOptions &options);

} // namespace pola::serve
