// Dynamic batching for one model: HTTP threads queue requests (each one or
// more preprocessed images); one worker thread groups what arrives within
// --max-wait-ms into engine calls of up to --max-batch images and hands each
// request exactly its own rows of logits. The queue is bounded in images, so
// an overloaded server refuses (503) instead of growing. Inference never runs
// on the HTTP threads, and a model only ever runs one engine call at a time
// (with all of its --threads).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <polaformer/polaformer.hpp>

#include "metrics.h"

namespace pola::serve {

struct BatchLimits {
  int max_batch = 16;          // images per engine call
  std::chrono::microseconds max_wait{2000};  // longest a request waits for company
  int max_queue = 256;         // images waiting, at most
};

// What a request gets back: its logits (rows x classes) or why it failed.
struct BatchAnswer {
  pola_status status = POLA_OK;
  std::string error;            // pola_last_error() of the failed call
  std::vector<float> logits;
  int batch_size = 0;           // images in the engine call that ran it
};

class ModelBatcher {
 public:
  ModelBatcher(std::string name, polaformer::Model &model, BatchLimits limits, Metrics &metrics, bool verbose);
  ~ModelBatcher();
  ModelBatcher(const ModelBatcher &) = delete;
  ModelBatcher &operator=(const ModelBatcher &) = delete;

  // Queues `rows` images (input holds rows x channels x height x width
  // floats). Empty when the queue has no room for them: the caller answers 503.
  std::optional<std::future<BatchAnswer>> submit(std::vector<float> input, int rows);

  // Images waiting now.
  size_t queued_images() const;
  const BatchLimits &limits() const { return limits_; }

  // Finishes everything queued, then ends the worker. Further submits are refused.
  void stop();

 private:
  struct Job {
    std::vector<float> input;
    int rows;
    std::chrono::steady_clock::time_point arrival;
    std::promise<BatchAnswer> answer;
  };

  void worker_loop();
  std::vector<Job> next_batch(std::unique_lock<std::mutex> &lock);
  void run(std::vector<Job> &jobs);
  // One engine call over the parts (pola_model_run_parts); on failure the
  // status, with the message in `error`.
  pola_status engine_call(const std::vector<const float *> &inputs, const std::vector<int> &counts,
                          const std::vector<float *> &logits, std::string &error);

  const std::string name_;
  polaformer::Model &model_;
  const BatchLimits limits_;
  Metrics &metrics_;
  const bool verbose_;
  const size_t per_image_;
  const int classes_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  size_t queued_images_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace pola::serve
