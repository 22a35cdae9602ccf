// A bounded closed-loop load generator for `pola serve` (`pola bench-serve`):
// `concurrency` clients, each with its own keep-alive connection, send the
// next request as soon as their previous answer arrives, until `requests`
// have been sent in all. Reports throughput, latency percentiles and the
// batch sizes the server formed (its X-Pola-Batch answer header).
#pragma once

#include <map>
#include <string>

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
  nlohmann::json to_json() const;
  std::string to_text() const;
};

LoadReport run_load(const LoadOptions &options);

} // namespace pola::serve
