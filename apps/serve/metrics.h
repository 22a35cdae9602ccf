// What `pola serve` counts, rendered in the Prometheus text exposition format
// (version 0.0.4) for GET /metrics. Label values come from fixed sets (the
// endpoint kinds below and the model names given at start), never from
// request paths, so a client cannot grow the label space.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pola::serve {

// A cumulative histogram with fixed upper bounds (Prometheus `le`).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double value);
  // Appends the _bucket, _sum and _count lines; `labels` is "" or `a="x",b="y"`.
  void render(std::string &out, const std::string &name, const std::string &labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
 public:
  explicit Metrics(std::vector<std::string> models);

  // One finished HTTP request: its endpoint kind, status and wall time.
  void record_request(const std::string &endpoint, int status, double seconds);
  // One engine call of `batch` images on `model`, taking `seconds`.
  void record_batch(const std::string &model, int batch, double seconds);
  // A request refused because the model's queue was full (503).
  void record_rejection(const std::string &model);
  // Where the current queue depth (images waiting) of a model is read at scrape time.
  void set_queue_depth_source(const std::string &model, std::function<size_t()> depth);

  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (endpoint, status) -> count
  std::map<std::string, Histogram> latency_;                 // endpoint -> seconds
  std::map<std::string, Histogram> batch_sizes_;             // model -> images per engine call
  std::map<std::string, Histogram> inference_;               // model -> seconds per engine call
  std::map<std::string, uint64_t> rejections_;                // model -> 503s
  std::map<std::string, std::function<size_t()>> queue_depth_;
};

} // namespace pola::serve
