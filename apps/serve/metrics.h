// What `pola serve` counts, rendered in the Prometheus text exposition format
// (version 0.0.4) for GET /metrics. Label values come from fixed sets (the
// endpoint kinds below and the model names given at start), never from
// request paths, so a client cannot grow the label space.
#pragma once

#include <array>
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

// Where an answered inference request (/infer, /classify) spent its time, in
// seconds, from its headers being read to its answer being written.
enum Phase {
  kReceive,    // reading the body
  kDecode,     // parsing the tensor, or decoding and preprocessing the image
  kQueue,      // queued, until the engine call that ran it started
  kInference,  // that engine call (shared with the rest of its batch)
  kHandoff,    // thread wake-ups between the HTTP thread and the model's worker, both ways
  kEncode,     // building the answer
  kSend,       // writing the answer to the socket
  kPhaseCount
};
extern const char *const kPhaseNames[kPhaseCount];
using RequestPhases = std::array<double, kPhaseCount>;

// User and system CPU seconds of this process so far.
double process_cpu_seconds();

class Metrics {
 public:
  explicit Metrics(std::vector<std::string> models);

  // One finished HTTP request: its endpoint kind, status and wall time.
  void record_request(const std::string &endpoint, int status, double seconds);
  // One engine call of `batch` images on `model`, taking `seconds`.
  void record_batch(const std::string &model, int batch, double seconds);
  // The phases of one answered inference request for `model`.
  void record_phases(const std::string &model, const RequestPhases &phases);
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
  std::map<std::string, std::pair<RequestPhases, uint64_t>> phases_;  // model -> (sums, requests)
  std::map<std::string, std::function<size_t()>> queue_depth_;
};

} // namespace pola::serve
