// A one-line progress bar on stderr, drawn only when stderr is a terminal (so
// logs and pipes stay clean), redrawn at most ~10 times a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace pola::eval {

class ProgressBar {
 public:
  explicit ProgressBar(int64_t total);
  ~ProgressBar() { finish(); }
  // `top1_percent` is shown when given (`pola eval`; `pola classify` has no labels).
  void update(int64_t done, std::optional<double> top1_percent = std::nullopt);
  // Erases the bar so other output (results, error lines) can use the line; the next update redraws it.
  void clear();
  // Ends the bar's line (if one was drawn) so what follows starts on a fresh line.
  void finish();

 private:
  int64_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

} // namespace pola::eval
