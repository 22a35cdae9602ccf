#include "load_generator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
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
// server's metadata says.
Request infer_request(httplib::Client &client, const LoadOptions &o, const httplib::Headers &auth) {
  auto res = client.Get(("/v2/models/" + o.model).c_str(), auth);
  if (!res) throw polaformer::InputError(o.url + ": no answer (" + httplib::to_string(res.error()) + ")");
  if (res->status != 200)
    throw polaformer::InputError(o.url + "/v2/models/" + o.model + ": status " + std::to_string(res->status) + ": " + res->body);
  const json meta = json::parse(res->body);
  std::vector<long long> shape = meta["inputs"][0]["shape"].get<std::vector<long long>>();
  shape[0] = 1;
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

  std::atomic<int> next{0};
  const int total = o.warmup + o.requests;
  std::mutex mutex;
  std::vector<double> latencies;
  LoadReport report;
  clock::time_point start{}, end{};
  std::atomic<bool> timing{false};
  std::once_flag started;
  auto client_loop = [&] {
    httplib::Client client(o.url);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);  // headers and body go out as two writes: no Nagle delay between them
    client.set_read_timeout(60, 0);
    for (;;) {
      const int i = next.fetch_add(1);
      if (i >= total) return;
      if (i == o.warmup) std::call_once(started, [&] { start = clock::now(); timing = true; });
      const auto t0 = clock::now();
      auto res = client.Post(request.path.c_str(), request.headers, request.body, request.content_type.c_str());
      const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
      if (i < o.warmup) continue;
      std::lock_guard<std::mutex> lock(mutex);
      const int status = res ? res->status : 0;
      ++report.statuses[status];
      if (status == 200) {
        ++report.ok;
        latencies.push_back(ms);
        const std::string b = res->get_header_value("X-Pola-Batch");
        if (!b.empty()) ++report.batch_sizes[std::atoi(b.c_str())];
      } else {
        ++report.failed;
      }
    }
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < o.concurrency; ++c) clients.emplace_back(client_loop);
  for (auto &t : clients) t.join();
  end = clock::now();
  if (!timing) start = end;
  report.seconds = std::chrono::duration<double>(end - start).count();
  report.requests_per_s = report.seconds > 0 ? report.ok / report.seconds : 0;
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
  return {{"ok", ok}, {"failed", failed}, {"statuses", statuses_j}, {"seconds", seconds},
          {"requests_per_s", requests_per_s}, {"p50_ms", p50_ms}, {"p90_ms", p90_ms}, {"p99_ms", p99_ms},
          {"mean_ms", mean_ms}, {"batch_sizes", batches_j}};
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
  if (failed) {
    s += "statuses   ";
    for (const auto &[st, n] : statuses) s += std::to_string(st) + ":" + std::to_string(n) + " ";
    s += "(0: no answer)\n";
  }
  return s;
}

} // namespace pola::serve
