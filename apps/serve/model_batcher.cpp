#include "model_batcher.h"

#include <algorithm>
#include <cstdio>

namespace pola::serve {

using clock = std::chrono::steady_clock;

ModelBatcher::ModelBatcher(std::string name, polaformer::Model &model, BatchLimits limits, Metrics &metrics,
                           bool verbose)
    : name_(std::move(name)), model_(model), limits_(limits), metrics_(metrics), verbose_(verbose),
      per_image_(model.input_shape().floats()), height_(model.input_shape().height),
      width_(model.input_shape().width), channels_(model.input_shape().channels), classes_(model.num_classes()) {
  metrics_.set_queue_depth_source(name_, [this] { return queued_images(); });
  worker_ = std::thread([this] { worker_loop(); });
}

ModelBatcher::~ModelBatcher() { stop(); }

ModelBatcher::Ticket ModelBatcher::announce() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++announced_;
  return Ticket(*this);
}

void ModelBatcher::withdraw() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --announced_;
  }
  wake_.notify_one();
}

std::optional<std::future<BatchAnswer>> ModelBatcher::submit(Ticket ticket, ImageData input, int rows, int height,
                                                             int width) {
  if (height == 0 && width == 0) {
    height = height_;
    width = width_;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  ticket.batcher_ = nullptr;  // the announcement ends here, queued or refused
  --announced_;
  if (stopping_ || queued_images_ + static_cast<size_t>(rows) > static_cast<size_t>(limits_.max_queue)) {
    lock.unlock();
    wake_.notify_one();
    return std::nullopt;
  }
  Job job{std::move(input), rows, height, width, clock::now(), {}};
  auto future = job.answer.get_future();
  queue_.push_back(std::move(job));
  queued_images_ += static_cast<size_t>(rows);
  lock.unlock();
  wake_.notify_one();
  return future;
}

size_t ModelBatcher::queued_images() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_images_;
}

void ModelBatcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (worker_.joinable()) worker_.join();
}

// Waits for the first request, then for company, up to max_wait after the
// later of its arrival and the moment the worker became free (time spent
// behind a running batch is queueing, not waiting for company). Company is
// the requests already announced (being read or parsed) and, with the
// adaptive policy, as many images as the previous batch held plus those that
// arrived while it ran: clients answered by a batch tend to come back with
// their next request, so a closed loop of 16 clients keeps forming batches of
// 16 instead of two alternating groups (which ran smaller batches, well
// under the engine's batch-16 images/s: bench/serve/README.md). It stops
// waiting as soon as a full batch is there, or nothing is announced and the
// expected images are there (a request that comes alone after one that came
// alone runs at once), or the server is stopping. With fixed_wait, it waits
// the whole max_wait for any request to come. Takes requests in arrival order
// while they fit in max_batch; a request larger than max_batch goes alone.
std::vector<ModelBatcher::Job> ModelBatcher::next_batch(std::unique_lock<std::mutex> &lock) {
  const auto free_since = std::chrono::steady_clock::now();
  const size_t expected =
      std::min(expected_images_ + arrived_during_run_, static_cast<size_t>(limits_.max_batch));
  wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
  if (queue_.empty()) return {};
  const auto deadline = std::max(queue_.front().arrival, free_since) + limits_.max_wait;
  wake_.wait_until(lock, deadline, [&] {
    return stopping_ || (!limits_.fixed_wait && announced_ == 0 && queued_images_ >= expected) ||
           queued_images_ >= static_cast<size_t>(limits_.max_batch);
  });
  std::vector<Job> jobs;
  int rows = 0;
  const int height = queue_.front().height, width = queue_.front().width;
  while (!queue_.empty() && (jobs.empty() || (rows + queue_.front().rows <= limits_.max_batch &&
                                              queue_.front().height == height && queue_.front().width == width))) {
    rows += queue_.front().rows;
    jobs.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  queued_images_ -= static_cast<size_t>(rows);
  expected_images_ = static_cast<size_t>(std::min(rows, limits_.max_batch));
  arrived_during_run_ = 0;
  return jobs;
}

void ModelBatcher::worker_loop() {
  for (;;) {
    std::vector<Job> jobs;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      jobs = next_batch(lock);
    }
    if (jobs.empty()) return;  // stopping, and the queue is drained
    run(jobs);
  }
}

// One engine call: its time is added to `spent` and recorded; on failure
// the status, with the library's message in `error`.
template <class Call>
pola_status ModelBatcher::timed_call(int rows, std::string &error, double &spent, Call &&call) {
  const auto t0 = clock::now();
  const pola_status status = call();
  const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
  spent += seconds;
  if (status != POLA_OK) {
    error = pola_last_error();
    return status;
  }
  record_call(rows, seconds);
  return POLA_OK;
}

pola_status ModelBatcher::engine_call(const std::vector<const float *> &inputs, const std::vector<int> &counts,
                                      const std::vector<float *> &logits, std::string &error, double &spent) {
  int rows = 0;
  for (int c : counts) rows += c;
  // The C call, not Model::run_parts: timed_call wants the status, not an exception.
  const polaformer::PartsRun parts(counts, logits);
  return timed_call(rows, error, spent,
                    [&] { return pola_run(model_.get(), &parts.options, inputs.data(), parts.outputs.data()); });
}

pola_status ModelBatcher::sized_call(const float *input, int rows, int height, int width, float *logits,
                                     std::string &error, double &spent) {
  pola_run_options options = pola_run_options_default();
  options.batch = rows;
  options.height = height;
  options.width = width;
  pola_run_output output = pola_run_output_default();
  output.logits = logits;
  const float *inputs[1] = {input};
  return timed_call(rows, error, spent, [&] { return pola_run(model_.get(), &options, inputs, &output); });
}

void ModelBatcher::record_call(int rows, double seconds) {
  metrics_.record_batch(name_, rows, seconds);
  if (verbose_)
    std::fprintf(stderr, "pola serve: %s: engine call of %d image%s: %.2f ms\n", name_.c_str(), rows,
                 rows == 1 ? "" : "s", seconds * 1e3);
}

// Runs the jobs as one engine call, each job's images and logits its own part
// (pola_run with parts); a lone job larger than max_batch runs in chunks of
// max_batch. If a shared call fails, every job is run again on its own, so
// one request's bad data (non-finite logits, say) is its own error and never
// its neighbours'.
void ModelBatcher::run(std::vector<Job> &jobs) {
  const auto started = clock::now();
  std::vector<BatchAnswer> answers(jobs.size());
  std::vector<const float *> inputs;
  std::vector<int> counts;
  std::vector<float *> logits;
  int rows = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    answers[i].logits.resize(static_cast<size_t>(jobs[i].rows) * classes_);
    rows += jobs[i].rows;
  }
  std::string error;
  pola_status status = POLA_OK;
  double engine_seconds = 0;
  const bool own_size = jobs.front().height == height_ && jobs.front().width == width_;
  if (!own_size) {
    // Another size: each request its own engine call (they are rare, and
    // run_sized takes one contiguous input).
    const size_t per_image = static_cast<size_t>(channels_) * jobs.front().height * jobs.front().width;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const Job &j = jobs[i];
      pola_status s = POLA_OK;
      std::string e;
      for (int first = 0; first < j.rows && s == POLA_OK; first += limits_.max_batch) {
        const int n = std::min(limits_.max_batch, j.rows - first);
        s = sized_call(j.input.data() + first * per_image, n, j.height, j.width,
                       answers[i].logits.data() + size_t(first) * classes_, e, engine_seconds);
      }
      answers[i].status = s;
      if (s != POLA_OK) {
        answers[i].error = e;
        answers[i].logits.clear();
      }
    }
  } else if (jobs.size() == 1) {
    const Job &j = jobs.front();
    for (int first = 0; first < j.rows && status == POLA_OK; first += limits_.max_batch) {
      const int n = std::min(limits_.max_batch, j.rows - first);
      status = engine_call({j.input.data() + first * per_image_}, {n},
                           {answers[0].logits.data() + size_t(first) * classes_}, error, engine_seconds);
    }
  } else {
    for (size_t i = 0; i < jobs.size(); ++i) {
      inputs.push_back(jobs[i].input.data());
      counts.push_back(jobs[i].rows);
      logits.push_back(answers[i].logits.data());
    }
    status = engine_call(inputs, counts, logits, error, engine_seconds);
    if (status != POLA_OK) {
      for (auto &j : jobs) {
        std::vector<Job> alone;
        alone.push_back(std::move(j));
        run(alone);
      }
      return;
    }
  }
  {
    // Counted before any answer goes out: what comes after is the answered
    // clients coming back, already counted in the batch's own size.
    std::lock_guard<std::mutex> lock(mutex_);
    arrived_during_run_ = queued_images_;
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (own_size) answers[i].status = status;
    answers[i].batch_size = own_size ? std::min(rows, limits_.max_batch) : std::min(jobs[i].rows, limits_.max_batch);
    answers[i].queue_seconds = std::chrono::duration<double>(started - jobs[i].arrival).count();
    answers[i].engine_seconds = engine_seconds;
    if (own_size && status != POLA_OK) {
      answers[i].error = error;
      answers[i].logits.clear();
    }
    jobs[i].answer.set_value(std::move(answers[i]));
  }
}

} // namespace pola::serve
