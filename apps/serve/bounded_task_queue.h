// The HTTP connection pool of `pola serve`: a fixed number of threads and at
// most as many accepted connections waiting for one. When all are taken,
// enqueue blocks the accept loop, so further clients wait in the kernel's
// listen backlog instead of in an unbounded list in this process
// (httplib's own ThreadPool never refuses a job).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace pola::serve {

class BoundedTaskQueue : public httplib::TaskQueue {
 public:
  explicit BoundedTaskQueue(size_t threads) : max_pending_(threads) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  ~BoundedTaskQueue() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return pending_.size() < max_pending_ || shutdown_; });
    pending_.push_back(std::move(fn));
    lock.unlock();
    ready_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (shutdown_) return;
      shutdown_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
    for (auto &t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !pending_.empty() || shutdown_; });
        if (pending_.empty()) return;  // shut down and drained
        fn = std::move(pending_.front());
        pending_.pop_front();
      }
      room_.notify_one();
      fn();
    }
  }

  const size_t max_pending_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<std::function<void()>> pending_;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

} // namespace pola::serve
