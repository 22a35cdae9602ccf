#include "load_generator.h"
#include "metrics.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <httplib.h>
#include <polaformer/polaformer.hpp>

namespace pola::serve {

using clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

std::string read_file(const std::string &path, const char *what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw polaformer::InputError(path + ": cannot read the " + std::string(what));
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

struct Request {
  std::string path, body, content_type;
  httplib::Headers headers;
};

// One binary-tensor infer request of a single random image, shaped as the
// server's metadata says (H and W, given as -1 since any size the model runs
// is taken, are the model's own size from its preprocessing).
Request infer_request(httplib::Client &client, const LoadOptions &o, const httplib::Headers &auth) {
  auto res = client.Get(("/v2/models/" + o.model).c_str(), auth);
  if (!res) throw polaformer::InputError(o.url + ": no answer (" + httplib::to_string(res.error()) + ")");
  if (res->status != 200)
    throw polaformer::InputError(o.url + "/v2/models/" + o.model + ": status " + std::to_string(res->status) + ": " + res->body);
  const json meta = json::parse(res->body);
  std::vector<long long> shape = meta["inputs"][0]["shape"].get<std::vector<long long>>();
  shape[0] = 1;
  for (size_t i = 2; i < shape.size(); ++i)
    if (shape[i] < 0) shape[i] = meta["pola"]["preprocess"]["input_size"].get<long long>();
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  std::vector<float> x(n);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (auto &v : x) v = normal(rng);
  const std::string header = json{{"inputs", {{{"name", "input"}, {"datatype", "FP32"}, {"shape", shape},
                                                 {"parameters", {{"binary_data_size", n * sizeof(float)}}}}}},
                                  {"outputs", {{{"name", "logits"}, {"parameters", {{"binary_data", true}}}}}}}
                                 .dump();
  Request r;
  r.path = "/v2/models/" + o.model + "/infer";
  r.body = header + std::string(reinterpret_cast<const char *>(x.data()), n * sizeof(float));
  r.content_type = "application/octet-stream";
  r.headers = auth;
  r.headers.emplace("Inference-Header-Content-Length", std::to_string(header.size()));
  return r;
}

// What the server reports about itself (GET /metrics): the summed phases of
// its answered inference requests for one model, and its CPU seconds.
struct ServerAccount {
  std::vector<std::pair<std::string, double>> phase_sums;  // in the server's order
  double phase_count = 0;
  double cpu_seconds = -1;  // -1: not reported
};

ServerAccount scrape(httplib::Client &client, const httplib::Headers &auth, const std::string &model) {
  ServerAccount a;
  auto res = client.Get("/metrics", auth);
  if (!res || res->status != 200) return a;
  const std::string sum = "pola_request_phase_seconds_sum{model=\"" + model + "\",phase=\"";
  const std::string count = "pola_request_phase_seconds_count{model=\"" + model + "\",phase=\"receive\"} ";
  const std::string cpu = "process_cpu_seconds_total ";
  size_t at = 0;
  while (at < res->body.size()) {
    size_t end = res->body.find('\n', at);
    if (end == std::string::npos) end = res->body.size();
    const std::string line = res->body.substr(at, end - at);
    at = end + 1;
    if (line.compare(0, sum.size(), sum) == 0) {
      const size_t quote = line.find('"', sum.size());
      const size_t space = line.rfind(' ');
      if (quote != std::string::npos && space != std::string::npos)
        a.phase_sums.emplace_back(line.substr(sum.size(), quote - sum.size()), std::atof(line.c_str() + space + 1));
    } else if (line.compare(0, count.size(), count) == 0) {
      a.phase_count = std::atof(line.c_str() + count.size());
    } else if (line.compare(0, cpu.size(), cpu) == 0) {
      a.cpu_seconds = std::atof(line.c_str() + cpu.size());
    }
  }
  return a;
}

double percentile(std::vector<double> sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(q * (sorted.size() - 1) + 0.5));
  return sorted[i];
}

} // namespace

LoadReport run_load(const LoadOptions &o) {
  httplib::Headers auth;
  if (!o.api_key_file.empty()) {
    std::string key = read_file(o.api_key_file, "API key file");
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
    auth.emplace("Authorization", "Bearer " + key);
  }
  Request request;
  {
    httplib::Client probe(o.url);
    if (!probe.is_valid()) throw polaformer::InputError(o.url + ": not a usable http:// URL");
    if (o.image.empty()) {
      request = infer_request(probe, o, auth);
    } else {
      request.path = "/v2/models/" + o.model + "/classify?top=1";
      request.body = read_file(o.image, "image");
      request.content_type = "application/octet-stream";
      request.headers = auth;
    }
  }

  // One keep-alive connection per client, kept from the warm-up into the timed part.
  std::vector<std::unique_ptr<httplib::Client>> clients;
  for (int c = 0; c < o.concurrency; ++c) {
    clients.push_back(std::make_unique<httplib::Client>(o.url));
    clients.back()->set_keep_alive(true);
    clients.back()->set_tcp_nodelay(true);  // headers and body go out as two writes: no Nagle delay between them
    clients.back()->set_read_timeout(60, 0);
  }
  // The body goes out from the one pre-encoded copy (no copy per request).
  const httplib::ContentProvider body = [&request](size_t offset, size_t length, httplib::DataSink &sink) {
    return sink.write(request.body.data() + offset, length);
  };
  std::mutex mutex;
  std::vector<double> latencies;
  latencies.reserve(static_cast<size_t>(o.requests));
  LoadReport report;
  // Sends `count` requests from all clients at once, each client its next one
  // as soon as its previous answer arrives; with `record`, counts the answers.
  auto closed_loop = [&](int count, bool record) {
    std::atomic<int> next{0};
    auto client_loop = [&](httplib::Client &client) {
      while (next.fetch_add(1) < count) {
        const auto t0 = clock::now();
        auto res = client.Post(request.path, request.headers, request.body.size(), body, request.content_type);
        const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
        if (!record) continue;
        const int status = res ? res->status : 0;
        int batch = 0;
        if (status == 200) {
          const std::string b = res->get_header_value("X-Pola-Batch");
          batch = b.empty() ? 0 : std::atoi(b.c_str());
        }
        std::lock_guard<std::mutex> lock(mutex);
        ++report.statuses[status];
        if (status == 200) {
          ++report.ok;
          latencies.push_back(ms);
          if (batch) ++report.batch_sizes[batch];
        } else {
          ++report.failed;
        }
      }
    };
    std::vector<std::thread> threads;
    for (auto &c : clients) threads.emplace_back(client_loop, std::ref(*c));
    for (auto &t : threads) t.join();
  };
  closed_loop(o.warmup, false);
  httplib::Client metrics(o.url);
  const ServerAccount before = scrape(metrics, auth, o.model);
  const double client_cpu_before = process_cpu_seconds();
  const auto start = clock::now();
  closed_loop(o.requests, true);
  const auto end = clock::now();
  const double client_cpu = process_cpu_seconds() - client_cpu_before;
  const ServerAccount after = scrape(metrics, auth, o.model);
  report.seconds = std::chrono::duration<double>(end - start).count();
  report.requests_per_s = report.seconds > 0 ? report.ok / report.seconds : 0;
  const double sent = report.ok + report.failed;
  report.client_cpu_ms = sent > 0 ? 1e3 * client_cpu / sent : 0;
  if (before.cpu_seconds >= 0 && after.cpu_seconds >= 0 && sent > 0)
    report.server_cpu_ms = 1e3 * (after.cpu_seconds - before.cpu_seconds) / sent;
  if (const double n = after.phase_count - before.phase_count; n > 0)
    for (const auto &[phase, total] : after.phase_sums) {
      double was = 0;
      for (const auto &[p, v] : before.phase_sums)
        if (p == phase) was = v;
      report.server_phases_ms.emplace_back(phase, 1e3 * (total - was) / n);
    }
  std::sort(latencies.begin(), latencies.end());
  report.p50_ms = percentile(latencies, 0.50);
  report.p90_ms = percentile(latencies, 0.90);
  report.p99_ms = percentile(latencies, 0.99);
  double sum = 0;
  for (double v : latencies) sum += v;
  report.mean_ms = latencies.empty() ? 0 : sum / latencies.size();
  return report;
}

json LoadReport::to_json() const {
  json statuses_j = json::object(), batches_j = json::object();
  for (const auto &[s, n] : statuses) statuses_j[std::to_string(s)] = n;
  for (const auto &[b, n] : batch_sizes) batches_j[std::to_string(b)] = n;
  json phases_j = json::object();
  for (const auto &[phase, ms] : server_phases_ms) phases_j[phase] = ms;
  json j{{"ok", ok}, {"failed", failed}, {"statuses", statuses_j}, {"seconds", seconds},
         {"requests_per_s", requests_per_s}, {"p50_ms", p50_ms}, {"p90_ms", p90_ms}, {"p99_ms", p99_ms},
         {"mean_ms", mean_ms}, {"batch_sizes", batches_j}, {"client_cpu_ms", client_cpu_ms},
         {"server_phases_ms", phases_j}};
  if (server_cpu_ms) j["server_cpu_ms"] = *server_cpu_ms;
  return j;
}

std::string LoadReport::to_text() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "requests   %d ok, %d failed in %.3f s\nthroughput %.1f requests/s\nlatency    p50 %.2f ms, p90 %.2f ms, "
                "p99 %.2f ms, mean %.2f ms\n",
                ok, failed, seconds, requests_per_s, p50_ms, p90_ms, p99_ms, mean_ms);
  std::string s = buf;
  s += "batches    ";
  for (const auto &[b, n] : batch_sizes) s += std::to_string(b) + ":" + std::to_string(n) + " ";
  s += "(batch size:answers)\n";
  if (!server_phases_ms.empty()) {
    s += "server     ";
    for (const auto &[phase, ms] : server_phases_ms) {
      std::snprintf(buf, sizeof buf, "%s %.3f ms, ", phase.c_str(), ms);
      s += buf;
    }
    s += "(mean per request)\n";
  }
  std::snprintf(buf, sizeof buf, "cpu        client %.3f ms per request", client_cpu_ms);
  s += buf;
  if (server_cpu_ms) {
    std::snprintf(buf, sizeof buf, ", server %.3f ms per request", *server_cpu_ms);
    s += buf;
  }
  s += "\n";
  if (failed) {
    s += "statuses   ";
    for (const auto &[st, n] : statuses) s += std::to_string(st) + ":" + std::to_string(n) + " ";
    s += "(0: no answer)\n";
  }
  return s;
}

} // namespace pola::serve
