#include "block_layout.h"

#include <regex>

#include "model/geometry.h"
#include "weights/error.h"

namespace pola::attention_map {
namespace {

// A few valid names for error messages, so a typo is easy to fix.
std::string polarity_block_names(const ModelConfig &cfg) {
  std::string out;
  for (size_t i = 0; i < cfg.stages.size(); ++i) {
    if (cfg.stages[i].attn != AttentionKind::polarity) continue;
    const std::string first = cfg.family == Family::pvt ? "block" + std::to_string(i + 1) + ".0"
                                                        : "layers." + std::to_string(i) + ".blocks.0";
    const std::string last = cfg.family == Family::pvt
                                 ? "block" + std::to_string(i + 1) + "." + std::to_string(cfg.stages[i].depth - 1)
                                 : "layers." + std::to_string(i) + ".blocks." + std::to_string(cfg.stages[i].depth - 1);
    out += (out.empty() ? "" : ", ") + first + (cfg.stages[i].depth > 1 ? " .. " + last : "");
  }
  return out.empty() ? "(none: the model has no polarity-attention stage)" : out;
}

[[noreturn]] void unknown_block(const ModelConfig &cfg, const std::string &name, const std::string &why) {
  throw InputError("--block '" + name + "': " + why + "; polarity-attention blocks of this model: " +
                   polarity_block_names(cfg));
}

} // namespace

BlockLayout find_block(const ModelConfig &cfg, const std::string &name) {
  static const std::regex pvt_name(R"(block([0-9]+)\.([0-9]+))");
  static const std::regex swin_name(R"(layers\.([0-9]+)\.blocks\.([0-9]+))");
  std::smatch m;
  const bool pvt = cfg.family == Family::pvt;
  if (!std::regex_match(name, m, pvt ? pvt_name : swin_name))
    unknown_block(cfg, name, pvt ? "a PVT block is named block<stage 1..4>.<index>"
                                 : "a Swin block is named layers.<stage 0..3>.blocks.<index>");
  // More digits than any model has blocks would overflow std::stol.
  if (m[1].length() > 4 || m[2].length() > 4) unknown_block(cfg, name, "no such block");
  const long stage = std::stol(m[1].str()) - (pvt ? 1 : 0);
  const long index = std::stol(m[2].str());
  if (stage < 0 || stage >= static_cast<long>(cfg.stages.size()) || index >= cfg.stages[stage].depth)
    unknown_block(cfg, name, "no such block");
  const StageConfig &s = cfg.stages[stage];
  if (s.attn != AttentionKind::polarity) unknown_block(cfg, name, "its stage uses softmax window attention, not polarity attention");

  BlockLayout L;
  L.block = name;
  L.family = cfg.family;
  L.heads = s.heads;
  L.dim = s.dim;
  const ModelGeometry geometry = model_geometry(cfg);
  const StageGeometry &st = geometry.stages[stage];
  const BlockGeometry &b = st.blocks[index];
  L.grid = st.res_h; // the checkpoint's own size: square
  L.q_rows = st.tokens;
  L.pe_rows = b.pos_enc_rows;
  if (pvt) {
    L.key_grid = b.kv_h; // keys of the spatially reduced grid, row-major
    L.k_rows = b.kv_tokens;
  } else {
    L.window = b.window_h;
    L.shift = b.shift;
    L.key_grid = L.grid; // keys of the query's window, drawn where they sit on the stage
    L.k_rows = st.tokens;
  }
  return L;
}

QueryKeys keys_of_query(const BlockLayout &L, int64_t qy, int64_t qx) {
  QueryKeys out;
  if (L.family == Family::pvt) {
    out.query_row = qy * L.grid + qx;
    for (int64_t j = 0; j < L.k_rows; ++j) {
      out.key_rows.push_back(j);
      out.pe_rows.push_back(j);
      out.map_index.push_back(j);  // keys are row-major over the key grid
    }
    return out;
  }
  // Swin: the rolled grid has rolled[y][x] = original[(y+s)%R][(x+s)%R], so
  // original (qy, qx) sits at rolled ((qy-s) mod R, (qx-s) mod R).
  const int64_t R = L.grid, w = L.window, s = L.shift, per_row = R / w;
  const int64_t ry = ((qy - s) % R + R) % R, rx = ((qx - s) % R + R) % R;
  const int64_t wy = ry / w, wx = rx / w, first = (wy * per_row + wx) * w * w;
  out.query_row = first + (ry % w) * w + (rx % w);
  for (int64_t t = 0; t < w * w; ++t) {
    const int64_t ky = (wy * w + t / w + s) % R, kx = (wx * w + t % w + s) % R;
    out.key_rows.push_back(first + t);
    out.pe_rows.push_back(t);
    out.map_index.push_back(ky * R + kx);
  }
  return out;
}

} // namespace pola::attention_map
