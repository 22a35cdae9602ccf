#include "run_probe.h"

#include <algorithm>
#include <chrono>

namespace polaformer_py {

RunProbe &run_probe() {
  static RunProbe probe;
  return probe;
}

void RunProbe::enter() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++active_;
  stats_.max_active = std::max(stats_.max_active, active_);
  if (parties_ <= 1) return;
  const long my_generation = generation_;
  if (++arrived_ == parties_) { // the last one in opens the barrier for all
    parties_ = arrived_ = 0;
    ++generation_;
    ++stats_.barrier_passed;
    filled_.notify_all();
    return;
  }
  const auto limit = std::chrono::duration<double>(timeout_seconds_);
  if (!filled_.wait_for(lock, limit, [&] { return generation_ != my_generation; })) {
    parties_ = arrived_ = 0; // give up: later runs must not wait either
    ++generation_;
    ++stats_.barrier_timeouts;
    filled_.notify_all();
  }
}

void RunProbe::leave() {
  std::lock_guard<std::mutex> lock(mutex_);
  --active_;
}

void RunProbe::arm(int parties, double timeout_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  parties_ = parties > 1 ? parties : 0;
  arrived_ = 0;
  ++generation_;
  timeout_seconds_ = timeout_seconds;
  stats_ = RunProbeStats{};
  filled_.notify_all();
}

RunProbeStats RunProbe::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

} // namespace polaformer_py
