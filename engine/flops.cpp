#include "engine/flops.h"

#include <algorithm>

namespace pola {
namespace {

// Polarity attention with n_q queries, n_k keys, h heads of d: the key side
// builds a (2d) x d state per head, the query side reads a (2d) x (d + 2) one.
int64_t polarity_macs(int64_t n_q, int64_t n_k, int64_t h, int64_t d) {
  return h * (n_k * 2 * d * d + n_q * 2 * d * (d + 2));
}

} // namespace

int64_t macs_per_image(const ModelConfig &cfg) {
  int64_t macs = 0;
  const int64_t ks = cfg.kernel_size;
  const auto res = stage_resolutions(cfg);
  if (cfg.family == Family::pvt) {
    int64_t in_ch = cfg.in_chans;
    for (size_t i = 0; i < cfg.stages.size(); ++i) {
      const auto &s = cfg.stages[i];
      const int64_t C = s.dim, N = int64_t(res[i]) * res[i], sr = s.sr_ratio, n = N / (sr * sr);
      const int64_t hid = static_cast<int64_t>(s.mlp_ratio * C), d = C / s.heads;
      macs += N * C * in_ch * s.patch * s.patch;
      int64_t block = N * C * 2 * C + n * C * 2 * C + N * C * C + 2 * N * C * hid + N * C * ks * ks +
                      polarity_macs(N, n, s.heads, d);
      if (sr > 1) block += n * C * C * sr * sr;
      macs += s.depth * block;
      in_ch = C;
    }
  } else {
    const int64_t p = cfg.patch_size;
    macs += int64_t(res[0]) * res[0] * cfg.stages[0].dim * cfg.in_chans * p * p;
    for (size_t i = 0; i < cfg.stages.size(); ++i) {
      const auto &s = cfg.stages[i];
      const int64_t r = res[i], C = s.dim, M = r * r, d = C / s.heads;
      const int64_t hid = static_cast<int64_t>(s.mlp_ratio * C);
      int64_t w = s.attn == 'L' ? cfg.window_size : cfg.window_size_softmax;
      w = std::min<int64_t>(w, r);
      const int64_t t = w * w, windows = M / t;
      int64_t block = M * C * C + 2 * M * C * hid; // proj + MLP
      if (s.attn == 'L')
        block += M * C * 4 * C + M * C * ks * ks + windows * polarity_macs(t, t, s.heads, d);
      else
        block += M * C * 3 * C + windows * 2 * t * t * C;
      macs += s.depth * block;
      if (i + 1 < cfg.stages.size()) macs += (M / 4) * 4 * C * 2 * C;
    }
  }
  macs += int64_t(cfg.stages.back().dim) * cfg.num_classes;
  return macs;
}

} // namespace pola
