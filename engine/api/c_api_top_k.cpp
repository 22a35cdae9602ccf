// pola_top_k: the one softmax and ranking behind the probabilities of every
// door (pola classify, pola serve's /classify, Model.classify in Python and
// the Dask example), so they report the same numbers to the last digit.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "guarded_call.h"

using pola::api::guarded_call;
using pola::api::require;

extern "C" {

POLA_API pola_status pola_top_k(const float *logits, int classes, int k, int *index, double *probability) {
  return guarded_call("pola_top_k", [&] {
    require(logits != nullptr, "logits must not be NULL");
    require(classes >= 1, "classes must be >= 1");
    require(k >= 1, "k must be >= 1");
    k = std::min(k, classes);
    // In double: the probabilities of unlikely classes keep their digits
    // instead of rounding to float's; the sum runs in index order, so the
    // result does not depend on anything but the logits.
    float top = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < classes; ++i)
      if (logits[i] > top) top = logits[i];
    std::vector<double> p(static_cast<size_t>(classes));
    double sum = 0;
    for (int i = 0; i < classes; ++i) sum += (p[i] = std::exp(double(logits[i]) - top));
    for (double &v : p) v /= sum;
    // Best first, ties to the lower index; NaN (only with non-finite logits let through) last.
    const auto rank = [&](int i) { return std::isnan(p[i]) ? -1.0 : p[i]; };
    std::vector<int> order(static_cast<size_t>(classes));
    for (int i = 0; i < classes; ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return rank(a) > rank(b) || (rank(a) == rank(b) && a < b); });
    for (int j = 0; j < k; ++j) {
      if (index) index[j] = order[j];
      if (probability) probability[j] = p[order[j]];
    }
  });
}

} // extern "C"
