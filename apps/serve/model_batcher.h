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
#include <utility>
#include <vector>

#include <polaformer/polaformer.hpp>

#include "image_data.h"
#include "metrics.h"

namespace pola::serve {

struct BatchLimits {
  int max_batch = 16;          // images per engine call
  std::chrono::microseconds max_wait{2000};  // longest a request waits for company
  int max_queue = 256;         // images waiting, at most
  // false (adaptive): wait only for requests being received and for the
  // previous batch's size plus what arrived while it ran (see next_batch);
  // true (fixed): every batch waits max_wait for company.
  bool fixed_wait = false;
};

// What a request gets back: its logits (rows x classes) or why it failed.
struct BatchAnswer {
  pola_status status = POLA_OK;
  std::string error;            // pola_last_error() of the failed call
  std::vector<float> logits;
  int batch_size = 0;           // images in the engine call that ran it
  double queue_seconds = 0;     // from submit() to the start of its engine call
  double engine_seconds = 0;    // the engine call(s) that ran it
};

class ModelBatcher {
 public:
  ModelBatcher(std::string name, polaformer::Model &model, BatchLimits limits, Metrics &metrics, bool verbose);
  ~ModelBatcher();
  ModelBatcher(const ModelBatcher &) = delete;
  ModelBatcher &operator=(const ModelBatcher &) = delete;

  // A request on its way to submit() (its body still being read or parsed):
  // the worker waits (at most max_wait) for announced requests to join its
  // batch (and for the previous batch's size), so a request that comes alone
  // after one that came alone runs at once.
  // Taken by submit(); a ticket destroyed without being submitted withdraws
  // the announcement.
  class Ticket {
   public:
    Ticket() = default;  // no announcement (no model to announce to)
    explicit Ticket(ModelBatcher &b) : batcher_(&b) {}
    Ticket(Ticket &&o) noexcept : batcher_(std::exchange(o.batcher_, nullptr)) {}
    Ticket(const Ticket &) = delete;
    Ticket &operator=(const Ticket &) = delete;
    Ticket &operator=(Ticket &&) = delete;
    ~Ticket() {
      if (batcher_) batcher_->withdraw();
    }

   private:
    friend class ModelBatcher;
    ModelBatcher *batcher_ = nullptr;
  };
  Ticket announce();

  // Queues `rows` images (input holds rows x channels x height x width
  // floats; 0 x 0: the model's own size). Empty when the queue has no room
  // for them: the caller answers 503. Only images of one size share an
  // engine call.
  std::optional<std::future<BatchAnswer>> submit(Ticket ticket, ImageData input, int rows, int height = 0,
                                                 int width = 0);

  // Images waiting now.
  size_t queued_images() const;
  const BatchLimits &limits() const { return limits_; }

  // Finishes everything queued, then ends the worker. Further submits are refused.
  void stop();

 private:
  struct Job {
    ImageData input;
    int rows;
    int height, width;
    std::chrono::steady_clock::time_point arrival;
    std::promise<BatchAnswer> answer;
  };

  void withdraw();
  void worker_loop();
  std::vector<Job> next_batch(std::unique_lock<std::mutex> &lock);
  void run(std::vector<Job> &jobs);
  // One engine call over the parts (pola_run with parts); on failure the
  // status, with the message in `error`.
  // The call's duration is added to `seconds`.
  pola_status engine_call(const std::vector<const float *> &inputs, const std::vector<int> &counts,
                          const std::vector<float *> &logits, std::string &error, double &seconds);
  // One engine call of `rows` images of another size than the model's.
  pola_status sized_call(const float *input, int rows, int height, int width, float *logits, std::string &error,
                         double &seconds);
  void record_call(int rows, double seconds);
  template <class Call>
  pola_status timed_call(int rows, std::string &error, double &spent, Call &&call);

  const std::string name_;
  polaformer::Model &model_;
  const BatchLimits limits_;
  Metrics &metrics_;
  const bool verbose_;
  const size_t per_image_;
  const int height_, width_, channels_;  // the model's own input size
  const int classes_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  size_t queued_images_ = 0;
  int announced_ = 0;  // tickets not yet submitted or withdrawn
  size_t expected_images_ = 0;  // images of the previous batch, none yet (adaptive: the next one waits for them)
  size_t arrived_during_run_ = 0;  // images queued while the previous batch ran (they join the expectation)
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace pola::serve
