// Global softmax attention with RoPE (GlobalAttnArgs), scalar: per head and
// query row, q and k rotated in fp32 as the kernels do (the scale multiplies
// the rotated q, SPEC-polaformerpp T8), then the full row of scores, its
// softmax and the value sum in double.
#include <cmath>
#include <vector>

#include "kernels/reference/reference.h"
#include "kernels/refuse.h"

namespace pola::kernels::reference {

namespace {

// y = rotate(x at token t) * s over d channels.
void rotate(const float *x, int d, const RopeTable &rope, int64_t t, float s, float *y) {
  for (int c = 0; c < d; c += 2) {
    if (!rope) {
      y[c] = x[c] * s;
      if (c + 1 < d) y[c + 1] = x[c + 1] * s;
      continue;
    }
    const float cs = rope.cos[t * rope.width + c], sn = rope.sin[t * rope.width + c];
    y[c] = (x[c] * cs - x[c + 1] * sn) * s;
    y[c + 1] = (x[c + 1] * cs + x[c] * sn) * s;
  }
}

} // namespace

void softmax_attention(const GlobalAttnArgs &a) {
  const int d = a.head_dim;
  if (a.rope && (a.rope.width != d || d % 2 != 0))
    refuse("softmax_attention", "the RoPE table must be head_dim wide and head_dim even");
  const int64_t n = a.n;
  const int64_t items = a.heads * n;
#pragma omp parallel for num_threads(a.threads > 1 ? a.threads : 1) if (a.threads > 1 && items > 1) schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t h = item / n, i = item % n;
    std::vector<float> q(static_cast<size_t>(d)), k(static_cast<size_t>(d));
    std::vector<double> s(static_cast<size_t>(n));
    rotate(a.q + i * a.ld_q + h * d, d, a.rope, i, a.scale, q.data());
    double mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
      rotate(a.k + j * a.ld_k + h * d, d, a.rope, j, 1.0f, k.data());
      double dot = 0;
      for (int c = 0; c < d; ++c) dot += double(q[c]) * k[c];
      s[j] = dot;
      mx = std::fmax(mx, dot);
    }
    double sum = 0;
    for (double &e : s) sum += (e = std::exp(e - mx));
    for (int c = 0; c < d; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += s[j] * a.v[j * a.ld_v + h * d + c];
      a.out[i * a.ld_out + h * d + c] = float(acc / sum);
    }
  }
}

} // namespace pola::kernels::reference
