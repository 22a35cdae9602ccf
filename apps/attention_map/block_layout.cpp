#include "block_layout.h"

#include "model/geometry.h"
#include "model/tensor_list.h"
#include "weights/error.h"

namespace pola::attention_map {
namespace {

// A few valid names for error messages, so a typo is easy to fix.
std::string polarity_block_names(const ModelConfig &cfg) {
  std::string out;
  for (size_t i = 0; i < cfg.stages.size(); ++i) {
    if (cfg.stages[i].attn != AttentionKind::polarity) continue;
    const size_t depth = static_cast<size_t>(cfg.stages[i].depth);
    out += (out.empty() ? "" : ", ") + block_name(cfg, i, 0) +
           (depth > 1 ? " .. " + block_name(cfg, i, depth - 1) : "");
  }
  return out.empty() ? "(none: the model has no polarity-attention stage)" : out;
}

[[noreturn]] void unknown_block(const ModelConfig &cfg, const std::string &name, const std::string &why) {
  throw InputError("--block '" + name + "': " + why + "; polarity-attention blocks of this model: " +
                   polarity_block_names(cfg));
}

} // namespace

BlockLayout find_block(const ModelConfig &cfg, const std::string &name) {
  // Names are the family's own (model/tensor_list.h block_name): compared
  // against every block rather than parsed, so no family's format is written here.
  size_t stage = 0, index = 0;
  bool found = false;
  for (size_t s = 0; s < cfg.stages.size() && !found; ++s)
    for (size_t j = 0; j < static_cast<size_t>(cfg.stages[s].depth) && !found; ++j)
      if (block_name(cfg, s, j) == name) {
        stage = s;
        index = j;
        found = true;
      }
  if (!found) unknown_block(cfg, name, "no such block");
  const StageConfig &s = cfg.stages[stage];
  if (s.attn != AttentionKind::polarity) unknown_block(cfg, name, "its stage uses softmax window attention, not polarity attention");

  const ModelGeometry geometry = model_geometry(cfg);
  const StageGeometry &st = geometry.stages[stage];
  const BlockGeometry &b = st.blocks[index];
  BlockLayout L;
  L.block = name;
  L.heads = static_cast<int>(s.heads);
  L.dim = static_cast<int>(s.dim);
  L.grid = st.res_h; // the checkpoint's own size: square, whole windows
  L.window = b.window_h;
  L.shift = b.shift;
  L.kv_side = b.kv_h;
  L.key_grid = L.grid / L.window * L.kv_side;
  L.q_rows = b.windows * b.window_tokens;
  L.k_rows = b.windows * b.kv_tokens;
  L.pe_rows = b.pos_enc_rows;
  return L;
}

QueryKeys keys_of_query(const BlockLayout &L, int64_t qy, int64_t qx) {
  QueryKeys out;
  // The rolled grid has rolled[y][x] = original[(y+s)%R][(x+s)%R], so
  // original (qy, qx) sits at rolled ((qy-s) mod R, (qx-s) mod R).
  const int64_t R = L.grid, w = L.window, s = L.shift, per_row = R / w;
  // The shift in key-grid cells: only windows whose key grid is the window
  // itself are shifted, so this is s wherever it is not 0.
  const int64_t kv = L.kv_side, K = L.key_grid, key_shift = s * kv / w;
  const int64_t ry = ((qy - s) % R + R) % R, rx = ((qx - s) % R + R) % R;
  const int64_t wy = ry / w, wx = rx / w, window = wy * per_row + wx;
  out.query_row = window * w * w + (ry % w) * w + (rx % w);
  for (int64_t t = 0; t < kv * kv; ++t) {
    // Key t of the window sits at (t / kv, t % kv) of its key grid; on the
    // map, the windows' key grids side by side, shifted back by the roll.
    const int64_t ky = (wy * kv + t / kv + key_shift) % K, kx = (wx * kv + t % kv + key_shift) % K;
    out.key_rows.push_back(window * kv * kv + t);
    out.pe_rows.push_back(t);
    out.map_index.push_back(ky * K + kx);
  }
  return out;
}

} // namespace pola::attention_map
