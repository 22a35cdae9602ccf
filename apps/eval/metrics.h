// Accuracy bookkeeping for `pola eval`: top-1 / top-5 counts, a confusion
// matrix, per-class accuracy and the most confused class pairs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pola::eval {

struct ConfusedPair {
  int truth, predicted;
  int64_t count;
};

class Metrics {
 public:
  explicit Metrics(int num_classes, int top_k = 5);

  // Scores one image; returns its top-1 class (the first index among equal maxima).
  int add(const float *logits, int label);

  int64_t images() const { return images_; }
  int64_t correct_top1() const { return top1_; }
  int64_t correct_topk() const { return topk_; }
  int top_k() const { return k_; }
  double top1_percent() const { return percent(top1_, images_); }
  double topk_percent() const { return percent(topk_, images_); }
  int64_t images_of_class(int c) const;
  double class_top1_percent(int c) const;
  // Off-diagonal confusion cells, largest first (ties: lower true class, then lower prediction).
  std::vector<ConfusedPair> most_confused(size_t how_many) const;

 private:
  static double percent(int64_t a, int64_t b) { return b ? 100.0 * double(a) / double(b) : 0.0; }
  int classes_, k_;
  int64_t images_ = 0, top1_ = 0, topk_ = 0;
  std::vector<int64_t> confusion_; // [truth * classes + predicted]
};

} // namespace pola::eval
