// Progress bar; see progress_bar.h.
#include "progress_bar.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace pola::eval {

ProgressBar::ProgressBar(int64_t total)
    : total_(total), enabled_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()), last_() {}

void ProgressBar::finish() {
  if (drawn_) std::fputc('\n', stderr);
  drawn_ = false;
  enabled_ = false;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr); // carriage return, then erase to the end of the line
  std::fflush(stderr);
  drawn_ = false;
}

void ProgressBar::update(int64_t done, std::optional<double> top1_percent) {
  if (!enabled_ || total_ <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const int filled = int(kWidth * done / total_);
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? double(done) / seconds : 0.0;
  std::fprintf(stderr, "\r[%s%s] %lld/%lld  %.0f img/s  ", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), (long long)done, (long long)total_, rate);
  if (top1_percent) std::fprintf(stderr, "top-1 %.2f%%  ", *top1_percent);
  std::fflush(stderr);
}

} // namespace pola::eval
