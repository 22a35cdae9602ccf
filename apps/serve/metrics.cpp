#include "metrics.h"

#include <sys/resource.h>

#include <cstdio>

namespace pola::serve {

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Label values are model names from the command line or fixed endpoint kinds;
// escaped anyway, as the format requires.
std::string label_value(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string join_labels(const std::string &a, const std::string &b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "," + b;
}

void header(std::string &out, const char *name, const char *type, const char *help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

const std::vector<double> kLatencyBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                            0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const std::vector<double> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256};

} // namespace

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

const char *const kPhaseNames[kPhaseCount] = {"receive", "decode", "queue", "inference", "handoff", "encode", "send"};

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  if (i < counts_.size()) ++counts_[i];
  ++count_;
  sum_ += value;
}

void Histogram::render(std::string &out, const std::string &name, const std::string &labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{" + join_labels(labels, "le=\"" + number(bounds_[i]) + "\"") + "} " +
           std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{" + join_labels(labels, "le=\"+Inf\"") + "} " + std::to_string(count_) + "\n";
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + number(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

Metrics::Metrics(std::vector<std::string> models) {
  for (const auto &m : models) {
    batch_sizes_.emplace(m, Histogram(kBatchBounds));
    inference_.emplace(m, Histogram(kLatencyBounds));
    rejections_.emplace(m, 0);
  }
}

void Metrics::record_request(const std::string &endpoint, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
  latency_.try_emplace(endpoint, kLatencyBounds).first->second.observe(seconds);
}

void Metrics::record_batch(const std::string &model, int batch, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  batch_sizes_.try_emplace(model, kBatchBounds).first->second.observe(batch);
  inference_.try_emplace(model, kLatencyBounds).first->second.observe(seconds);
}

void Metrics::record_phases(const std::string &model, const RequestPhases &p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto &[sums, n] = phases_[model];
  for (size_t i = 0; i < kPhaseCount; ++i) sums[i] += p[i];
  ++n;
}

void Metrics::record_rejection(const std::string &model) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++rejections_[model];
}

void Metrics::set_queue_depth_source(const std::string &model, std::function<size_t()> depth) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_depth_[model] = std::move(depth);
}

std::string Metrics::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  header(out, "pola_http_requests_total", "counter",
         "HTTP requests answered, by endpoint and status code (errors are the codes >= 400)");
  for (const auto &[key, n] : requests_)
    out += "pola_http_requests_total{endpoint=\"" + label_value(key.first) + "\",code=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  header(out, "pola_http_request_duration_seconds", "histogram",
         "Time from the request's headers to its answer, by endpoint");
  for (const auto &[endpoint, h] : latency_)
    h.render(out, "pola_http_request_duration_seconds", "endpoint=\"" + label_value(endpoint) + "\"");
  header(out, "pola_batch_size", "histogram", "Images per engine call (dynamic batches), by model");
  for (const auto &[model, h] : batch_sizes_) h.render(out, "pola_batch_size", "model=\"" + label_value(model) + "\"");
  header(out, "pola_inference_duration_seconds", "histogram", "Seconds per engine call, by model");
  for (const auto &[model, h] : inference_)
    h.render(out, "pola_inference_duration_seconds", "model=\"" + label_value(model) + "\"");
  header(out, "pola_queue_depth", "gauge", "Images waiting for an engine call, by model");
  for (const auto &[model, depth] : queue_depth_)
    out += "pola_queue_depth{model=\"" + label_value(model) + "\"} " + std::to_string(depth()) + "\n";
  header(out, "pola_queue_rejections_total", "counter", "Requests refused with 503 because the queue was full");
  for (const auto &[model, n] : rejections_)
    out += "pola_queue_rejections_total{model=\"" + label_value(model) + "\"} " + std::to_string(n) + "\n";
  header(out, "pola_request_phase_seconds", "summary",
         "Where answered inference requests spent their time, by model and phase: receive (the body), decode "
         "(tensor parsing or image decoding), queue (until their engine call), inference (that engine call, shared "
         "by its batch), handoff (thread wake-ups between HTTP thread and model worker), encode (the answer), send");
  for (const auto &[model, entry] : phases_)
    for (size_t i = 0; i < kPhaseCount; ++i) {
      const std::string labels = "{model=\"" + label_value(model) + "\",phase=\"" + kPhaseNames[i] + "\"}";
      out += "pola_request_phase_seconds_sum" + labels + " " + number(entry.first[i]) + "\n";
      out += "pola_request_phase_seconds_count" + labels + " " + std::to_string(entry.second) + "\n";
    }
  // The standard process metric: what the server costs in CPU, whatever the load generator costs.
  header(out, "process_cpu_seconds_total", "counter", "User and system CPU time of the server process");
  out += "process_cpu_seconds_total " + number(process_cpu_seconds()) + "\n";
  return out;
}

} // namespace pola::serve
