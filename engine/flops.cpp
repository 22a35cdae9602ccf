#include "engine/flops.h"

#include "model/geometry.h"

namespace pola {
namespace {

// Polarity attention with n_q queries, n_k keys, h heads of d: the key side
// builds a (2d) x d state per head, the query side reads a (2d) x (d + 2) one.
int64_t polarity_macs(int64_t n_q, int64_t n_k, int64_t h, int64_t d) {
  return h * (n_k * 2 * d * d + n_q * 2 * d * (d + 2));
}

// One block of stage `s`: attention (projections, core, local branch) + MLP.
int64_t block_macs(const ModelConfig &cfg, const StageConfig &s, const StageGeometry &st, const BlockGeometry &b) {
  const int64_t C = s.dim, N = st.tokens, ks = cfg.kernel_size, d = s.head_dim();
  const int64_t mlp = 2 * N * C * s.hidden(), proj = N * C * C;
  if (cfg.family == Family::pvt) {
    const int64_t n = b.kv_tokens, sr = s.sr_ratio;
    int64_t macs = N * C * 2 * C + n * C * 2 * C + proj + mlp + N * C * ks * ks + polarity_macs(N, n, s.heads, d);
    if (sr > 1) macs += n * C * C * sr * sr; // spatial-reduction conv
    return macs;
  }
  const int64_t t = b.window_tokens;
  if (s.attn == AttentionKind::polarity)
    return proj + mlp + N * C * 4 * C + N * C * ks * ks + b.windows * polarity_macs(t, t, s.heads, d);
  return proj + mlp + N * C * 3 * C + b.windows * 2 * t * t * C;
}

} // namespace

int64_t macs_per_image(const ModelConfig &cfg) { return macs_per_image(cfg, cfg.img_size, cfg.img_size); }

int64_t macs_per_image(const ModelConfig &cfg, int64_t height, int64_t width) {
  const ModelGeometry g = model_geometry(cfg, height, width);
  int64_t macs = 0;
  for (size_t i = 0; i < cfg.stages.size(); ++i) {
    const StageGeometry &st = g.stages[i];
    // The stage's downsampling: a patch-embedding conv (kernel = stride), or
    // Swin's patch merging (2 x 2 tokens of C_in channels -> 2 C_in), which
    // costs what a conv of patch 2 would.
    macs += st.tokens * st.channels * st.in_channels * st.patch * st.patch;
    for (const BlockGeometry &b : st.blocks) macs += block_macs(cfg, cfg.stages[i], st, b);
  }
  macs += cfg.stages.back().dim * cfg.num_classes;
  return macs;
}

} // namespace pola
