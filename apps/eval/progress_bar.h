// A one-line progress bar on stderr, drawn only when stderr is a terminal (so
// logs and pipes stay clean), redrawn at most ~10 times a second.
#pragma once

#include <chrono>
#include <cstdint>

namespace pola::eval {

class ProgressBar {
 public:
  explicit ProgressBar(int64_t total);
  ~ProgressBar() { finish(); }
  void update(int64_t done, double top1_percent);
  // Ends the bar's line (if one was drawn) so what follows starts on a fresh line.
  void finish();

 private:
  int64_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

} // namespace pola::eval
