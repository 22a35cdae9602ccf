// A probe around every engine run the binding makes, for the test that the
// GIL is released during inference: it counts the runs in progress (the
// highest count seen) and can hold each run at a barrier until `parties` runs
// are inside at once. With the GIL held across a run, a second Python thread
// could never get in, so the barrier would time out: the test counts, it does
// not time anything. Disarmed (the default) it costs two uncontended mutex locks per run.
#pragma once

#include <condition_variable>
#include <mutex>

namespace polaformer_py {

struct RunProbeStats {
  int max_active = 0;        // most runs seen in progress at once
  int barrier_passed = 0;    // barriers that filled up
  int barrier_timeouts = 0;  // barriers given up on
};

class RunProbe {
 public:
  // Called with the GIL released, around each engine run.
  void enter();
  void leave();

  // The next `parties` runs wait for each other (at most `timeout_seconds`);
  // parties <= 1 disarms. Resets the statistics.
  void arm(int parties, double timeout_seconds);
  RunProbeStats stats();

 private:
  std::mutex mutex_;
  std::condition_variable filled_;
  int active_ = 0;
  int parties_ = 0;
  int arrived_ = 0;
  long generation_ = 0;
  double timeout_seconds_ = 0;
  RunProbeStats stats_;
};

RunProbe &run_probe();

} // namespace polaformer_py
