// Accuracy bookkeeping; see metrics.h.
#include "metrics.h"

#include <algorithm>

namespace pola::eval {

Metrics::Metrics(int num_classes, int top_k)
    : classes_(num_classes), k_(std::min(top_k, num_classes)), confusion_(size_t(num_classes) * num_classes, 0) {}

int Metrics::add(const float *logits, int label) {
  int best = 0;
  for (int c = 1; c < classes_; ++c)
    if (logits[c] > logits[best]) best = c;
  // The label is in the top k when fewer than k classes beat it; a class that ties with the
  // label counts as beating it only if it comes first, matching a stable sort by score.
  int ahead = 0;
  for (int c = 0; c < classes_; ++c)
    if (logits[c] > logits[label] || (logits[c] == logits[label] && c < label)) ++ahead;
  ++images_;
  top1_ += best == label;
  topk_ += ahead < k_;
  ++confusion_[size_t(label) * classes_ + best];
  return best;
}

int64_t Metrics::images_of_class(int c) const {
  int64_t n = 0;
  for (int p = 0; p < classes_; ++p) n += confusion_[size_t(c) * classes_ + p];
  return n;
}

double Metrics::class_top1_percent(int c) const {
  return percent(confusion_[size_t(c) * classes_ + c], images_of_class(c));
}

std::vector<ConfusedPair> Metrics::most_confused(size_t how_many) const {
  std::vector<ConfusedPair> pairs;
  for (int t = 0; t < classes_; ++t)
    for (int p = 0; p < classes_; ++p)
      if (t != p && confusion_[size_t(t) * classes_ + p] > 0) pairs.push_back({t, p, confusion_[size_t(t) * classes_ + p]});
  std::stable_sort(pairs.begin(), pairs.end(), [](const ConfusedPair &a, const ConfusedPair &b) { return a.count > b.count; });
  if (pairs.size() > how_many) pairs.resize(how_many);
  return pairs;
}

} // namespace pola::eval
