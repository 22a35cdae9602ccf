// `pola attention-map`: where one query location of one polarity-attention
// block looks, drawn over the image. The pieces live in apps/attention_map/:
// block_layout (which rows are the query and its keys), capture_qk (q and k
// through the engine's NodeObserver), polarity_row (the weights, SPEC 3),
// heatmap_image (the overlay, PNG or JPEG).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "weights/file_access.h"
#include "attention_map/block_layout.h"
#include "attention_map/capture_qk.h"
#include "attention_map/heatmap_image.h"
#include "attention_map/polarity_row.h"
#include "cli_checks.h"
#include "command.h"
#include "engine/api/model_image_spec.h"
#include "engine/io/npy.h"
#include "engine/model.h"
#include "weights/error.h"
#include "weights/model_file.h"

namespace {

using namespace pola::attention_map;

struct AttentionMapArgs {
  std::string model, image, block, query, output, npy;
  int threads = 0, zoom = 1;
};

// "X,Y": integer pixel coordinates in the model's input image.
void parse_query(const std::string &text, int size, int &x, int &y) {
  const auto comma = text.find(',');
  size_t used_x = 0, used_y = 0;
  bool ok = comma != std::string::npos;
  try {
    if (ok) {
      x = std::stoi(text.substr(0, comma), &used_x);
      y = std::stoi(text.substr(comma + 1), &used_y);
      ok = used_x == comma && used_y == text.size() - comma - 1;
    }
  } catch (const std::exception &) {
    ok = false;
  }
  if (!ok) throw pola::InputError("--query '" + text + "': expected X,Y (two integers, e.g. 112,80)");
  if (x < 0 || y < 0 || x >= size || y >= size)
    throw pola::InputError("--query " + text + " is outside the model's " + std::to_string(size) + " x " +
                           std::to_string(size) + " input (0 <= X, Y < " + std::to_string(size) + ")");
}

// A raw parameter of the block, checked for the size the layout implies.
const float *block_tensor(const pola::weights::ModelFile &file, const std::string &name, int64_t numel) {
  const auto *t = file.find(name);
  // PolaFormer++ blocks (exp feature map with RoPE) have no power/scale: the
  // map this tool draws is PolaFormer's.
  if (!t && file.find(name.substr(0, name.rfind('.') + 1) + "s1"))
    throw pola::InputError(file.path() + ": block " + name.substr(0, name.rfind(".attn.")) +
                           " is a PolaFormer++ block (exp feature map with RoPE); attention-map draws "
                           "PolaFormer's abs-pow polarity attention only");
  if (!t || t->numel != numel)
    throw pola::InputError(file.path() + ": tensor '" + name + "' is missing or has " +
                           std::to_string(t ? t->numel : 0) + " values, expected " + std::to_string(numel));
  if (t->dtype != pola::weights::StoredDtype::f32) // `pola convert --dtype bf16` keeps these F32
    throw pola::InputError(file.path() + ": tensor '" + name + "' is stored as " +
                           pola::weights::stored_dtype_name(t->dtype) + "; the attention map reads it as F32");
  return t->data;
}

void attention_map_command(const AttentionMapArgs &a) {
  for (const std::string &out : {a.output, a.npy})
    if (!out.empty()) pola::weights::check_output_is_not_input(out, {a.model, a.image});
  (void)output_format(a.output);  // refuses a format it cannot write before the model runs
  if (!a.npy.empty()) pola::weights::check_output_is_not_input(a.npy, {a.output});
  pola::ModelOptions opt;
  opt.threads = a.threads;
  auto model = pola::Model::load(a.model, opt);
  const auto &cfg = model->config();
  const BlockLayout layout = find_block(cfg, a.block);
  const auto spec = pola::api::model_image_spec(*model, a.model);
  int qx = 0, qy = 0;
  parse_query(a.query, cfg.img_size, qx, qy);
  const std::vector<float> input = pola::preprocess::load_and_preprocess(a.image, spec);

  const CapturedQK qk = capture_qk(*model, input.data(), layout);
  const int64_t C = layout.dim, token_y = qy * layout.grid / cfg.img_size, token_x = qx * layout.grid / cfg.img_size;
  const QueryKeys keys = keys_of_query(layout, token_y, token_x);

  // The raw parameters, from the file the model was loaded from (the model
  // keeps only transformed copies); it has already validated their shapes.
  const pola::weights::ModelFile &file = model->file();
  const std::string attn = layout.block + ".attn.";
  PolarityParams params;
  params.heads = layout.heads;
  params.head_dim = layout.dim / layout.heads;
  params.alpha = cfg.alpha;
  params.power = block_tensor(file, attn + "power", C);
  params.scale = block_tensor(file, attn + "scale", C);
  const float *pe = block_tensor(file, attn + "positional_encoding", layout.pe_rows * C);
  std::vector<const float *> key_rows, pe_rows;
  for (size_t j = 0; j < keys.key_rows.size(); ++j) {
    key_rows.push_back(qk.k.data() + keys.key_rows[j] * C);
    pe_rows.push_back(pe + keys.pe_rows[j] * C);
  }
  const std::vector<double> row = polarity_attention_row(params, qk.q.data() + keys.query_row * C, key_rows, pe_rows);

  // Scatter onto the key grid; for a Swin window, cells outside it stay 0.
  const int64_t side = layout.key_grid;
  std::vector<double> map(static_cast<size_t>(side * side), 0.0);
  for (size_t j = 0; j < row.size(); ++j) map[keys.map_index[j]] = row[j];

  if (!a.npy.empty()) {
    std::vector<float> as_float(map.begin(), map.end());
    pola::io::write_npy(a.npy, {side, side}, as_float.data());
  }
  const RgbImage base = denormalise(input, spec.channels, cfg.img_size, spec.mean, spec.std);
  write_overlay(a.output, base, upsample_bilinear(map, side, cfg.img_size), qx, qy, a.zoom);

  const auto best = std::max_element(map.begin(), map.end()) - map.begin();
  std::printf("%s: query pixel (%d, %d) = token (%lld, %lld) of %lld x %lld; %zu keys on a %lld x %lld grid; "
              "strongest key (%lld, %lld) weight %.4g; wrote %s\n",
              layout.block.c_str(), qx, qy, (long long)token_x, (long long)token_y, (long long)layout.grid,
              (long long)layout.grid, row.size(), (long long)side, (long long)side, (long long)(best % side),
              (long long)(best / side), map[best], a.output.c_str());
}

const char *kDefinition =
    "The map is one row of the block's implicit attention matrix, built from the block's own\n"
    "features (SPEC.md section 3) for the query token under pixel X,Y:\n"
    "  q, k  = the block's projections (attn.qg / attn.kv, or attn.qkvg for Swin)\n"
    "  k' = (k + positional_encoding) / softplus(scale),  q' = q / softplus(scale)\n"
    "  p  = 1 + alpha * sigmoid(power)  (per head and channel)\n"
    "  q_sim = [relu(q')^p, relu(-q')^p], q_opp = [relu(-q')^p, relu(q')^p],\n"
    "  phi_k = [relu(k')^p, relu(-k')^p]  (per head)\n"
    "  A_sim[j] = q_sim.phi_k[j] / sum_j' q_sim.phi_k[j']  (A_opp likewise with q_opp)\n"
    "  map[j] = mean over heads of (A_sim[j] + A_opp[j]) / 2\n"
    "so the weights over keys j sum to 1 (a head whose denominator is 0 counts as uniform).\n"
    "Keys: PVT, every token of the stage (after spatial reduction, if any); Swin, the tokens of\n"
    "the query's (shifted) window, the rest of the map is 0. The image shows the map upsampled\n"
    "bilinearly over the preprocessed image, coloured relative to its maximum; a cyan cross\n"
    "marks the query. Blocks: PVT block<stage 1..4>.<index>, Swin layers.<stage>.blocks.<index>\n"
    "in polarity-attention (L) stages.\n"
    "Example: pola attention-map -m model.pola cat.png --block block2.0 --query 100,60 -o map.png";

pola::app::RegisterCommand register_attention_map([](CLI::App &root) {
  auto a = std::make_shared<AttentionMapArgs>();
  auto *c = root.add_subcommand("attention-map",
                                "Draw where one query location of a polarity-attention block looks (PNG or JPEG heat map)");
  c->footer(kDefinition);
  c->add_option("--model,-m", a->model, "Model file (.pola)")->required();
  c->add_option("image", a->image, "Image file (JPEG, PNG, BMP, GIF, ...), preprocessed as the model prescribes")
      ->required();
  c->add_option("--block,-b", a->block, "Block name, e.g. block2.0 (PVT) or layers.1.blocks.0 (Swin)")->required();
  c->add_option("--query,-q", a->query, "X,Y: query pixel in the model's input image (after resize and crop)")
      ->required();
  c->add_option("-o,--output", a->output, "Output image: PNG, or JPEG when the name ends in .jpg or .jpeg")
      ->required();
  c->add_option("--npy", a->npy, "Also write the raw map (key grid side x side, float32, sums to 1) as .npy");
  c->add_option("--zoom", a->zoom, "Enlarge the image this many times (nearest), for small inputs")
      ->check(pola::app::whole_number_in(1, 16));
  c->add_option("--threads,-t", a->threads, "Worker threads (0 = all cores)")
      ->check(pola::app::whole_number_in(0, 1024));
  c->callback([a] { attention_map_command(*a); });
});

} // namespace
