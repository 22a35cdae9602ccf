// Model configs: JSON form, presets, sanity checks and the tensor checklist.
// The checklist mirrors the model definitions of SPEC sections 3-6 so that the
// converter can refuse any checkpoint the engine could not run.
#include "weights/model_config.h"

#include <cmath>
#include <sstream>

#include "weights/error.h"

namespace pola::weights {
namespace {

using Json = nlohmann::json;

template <class T>
std::string list_string(const std::vector<T> &v) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
  o << ']';
  return o.str();
}

Json number_json(double x) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) return Json(static_cast<int64_t>(x));
  return Json(x);
}

ModelConfig pvt(std::vector<int64_t> depths) {
  ModelConfig c;
  c.family = "pvt";
  c.embed_dims = {64, 128, 320, 512};
  c.depths = std::move(depths);
  c.num_heads = {1, 2, 5, 8};
  c.mlp_ratios = {8, 8, 4, 4};
  c.attn_types = {"L", "L", "L", "L"};
  c.patch_sizes = {4, 2, 2, 2};
  c.sr_ratios = {1, 1, 1, 1};
  return c;
}

ModelConfig swin(int64_t dim, std::vector<int64_t> depths, std::vector<int64_t> heads, int64_t img) {
  ModelConfig c;
  c.family = "swin";
  c.img_size = img;
  c.embed_dims = {dim, 2 * dim, 4 * dim, 8 * dim};
  c.depths = std::move(depths);
  c.num_heads = std::move(heads);
  c.mlp_ratios = {4, 4, 4, 4};
  c.attn_types = {"L", "L", "S", "S"};
  c.patch_size = 4;
  c.window_size = img == 384 ? 96 : 56;
  c.window_size_softmax = c.window_size > 56 ? 12 : 7;
  return c;
}

[[noreturn]] void bad(const std::string &context, const std::string &what) { throw InputError(context + ": " + what); }

} // namespace

std::string shape_string(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

Json config_to_json(const ModelConfig &c) {
  Json j;
  j["family"] = c.family;
  j["img_size"] = c.img_size;
  j["in_chans"] = c.in_chans;
  j["num_classes"] = c.num_classes;
  j["embed_dims"] = c.embed_dims;
  j["depths"] = c.depths;
  j["num_heads"] = c.num_heads;
  Json ratios = Json::array();
  for (double r : c.mlp_ratios) ratios.push_back(number_json(r));
  j["mlp_ratios"] = ratios;
  j["attn_types"] = c.attn_types;
  j["alpha"] = number_json(c.alpha);
  j["kernel_size"] = c.kernel_size;
  if (c.family == "pvt") {
    j["patch_sizes"] = c.patch_sizes;
    j["sr_ratios"] = c.sr_ratios;
  } else {
    j["patch_size"] = c.patch_size;
    j["window_size"] = c.window_size;
    j["window_size_softmax"] = c.window_size_softmax;
  }
  return j;
}

ModelConfig config_from_json(const Json &j, const std::string &context) {
  if (!j.is_object()) bad(context, "config is not a JSON object");
  ModelConfig c;
  auto need = [&](const char *k) -> const Json & {
    auto it = j.find(k);
    if (it == j.end()) bad(context, std::string("config has no '") + k + "'");
    return *it;
  };
  // Integers only: get<int64_t>() would truncate 16.5 to 16, and casting a
  // float beyond int64 range (1e300) is undefined behaviour.
  auto need_int = [&](const char *k) -> int64_t {
    const Json &v = need(k);
    if (!v.is_number_integer()) bad(context, std::string("config '") + k + "' is not an integer");
    return v.get<int64_t>();
  };
  auto need_ints = [&](const char *k) {
    const Json &v = need(k);
    if (!v.is_array()) bad(context, std::string("config '") + k + "' is not a list");
    for (const auto &e : v)
      if (!e.is_number_integer()) bad(context, std::string("config '") + k + "' holds a non-integer");
    return v.get<std::vector<int64_t>>();
  };
  try {
    c.family = need("family").get<std::string>();
    c.img_size = need_int("img_size");
    c.in_chans = need_int("in_chans");
    c.num_classes = need_int("num_classes");
    c.embed_dims = need_ints("embed_dims");
    c.depths = need_ints("depths");
    c.num_heads = need_ints("num_heads");
    c.mlp_ratios = need("mlp_ratios").get<std::vector<double>>();
    c.attn_types = need("attn_types").get<std::vector<std::string>>();
    c.alpha = need("alpha").get<double>();
    c.kernel_size = need_int("kernel_size");
    if (c.family == "pvt") {
      c.patch_sizes = need_ints("patch_sizes");
      c.sr_ratios = need_ints("sr_ratios");
    } else {
      c.patch_size = need_int("patch_size");
      c.window_size = need_int("window_size");
      c.window_size_softmax = need_int("window_size_softmax");
    }
  } catch (const nlohmann::json::exception &e) {
    bad(context, std::string("config has a value of the wrong type: ") + e.what());
  }
  check_config(c, context);
  return c;
}

void check_config(const ModelConfig &c, const std::string &ctx) {
  constexpr int64_t kBig = 1 << 20; // no real model comes near; keeps products far from overflow
  constexpr int64_t kMaxDepth = 1000; // blocks per stage, the engine's limit too (released models: <= 27)
  auto in_range = [&](int64_t v, const char *what) {
    if (v <= 0 || v > kBig) bad(ctx, std::string("config ") + what + " = " + std::to_string(v) + " is out of range");
  };
  if (c.family != "pvt" && c.family != "swin") bad(ctx, "config family '" + c.family + "' is not pvt or swin");
  const size_t n = c.depths.size();
  if (n == 0 || n > 8) bad(ctx, "config must have 1 to 8 stages");
  if (c.embed_dims.size() != n || c.num_heads.size() != n || c.mlp_ratios.size() != n || c.attn_types.size() != n)
    bad(ctx, "config lists (embed_dims, depths, num_heads, mlp_ratios, attn_types) differ in length");
  in_range(c.img_size, "img_size");
  in_range(c.in_chans, "in_chans");
  in_range(c.num_classes, "num_classes");
  in_range(c.kernel_size, "kernel_size");
  if (c.kernel_size % 2 == 0) bad(ctx, "config kernel_size must be odd");
  if (!(c.alpha > 0) || !std::isfinite(c.alpha)) bad(ctx, "config alpha must be positive");
  for (size_t s = 0; s < n; ++s) {
    const std::string st = " of stage " + std::to_string(s + 1);
    in_range(c.embed_dims[s], ("embed_dims" + st).c_str());
    in_range(c.depths[s], ("depths" + st).c_str());
    // A single stray key like "block1.999999.x" would otherwise imply millions
    // of expected tensors (gigabytes of checklist) before any shape is checked.
    if (c.depths[s] > kMaxDepth) bad(ctx, "config depths" + st + " = " + std::to_string(c.depths[s]) + " exceeds " + std::to_string(kMaxDepth));
    in_range(c.num_heads[s], ("num_heads" + st).c_str());
    if (c.embed_dims[s] % c.num_heads[s] != 0)
      bad(ctx, "config embed_dims" + st + " (" + std::to_string(c.embed_dims[s]) + ") is not divisible by its " +
                   std::to_string(c.num_heads[s]) + " heads");
    const int64_t d = c.embed_dims[s] / c.num_heads[s];
    if (c.attn_types[s] != "L" && c.attn_types[s] != "S") bad(ctx, "config attn_types" + st + " is not L or S");
    if (c.attn_types[s] == "L" && d % 2 != 0) bad(ctx, "config head dim" + st + " must be even for polarity attention");
    if (c.family == "pvt" && c.attn_types[s] != "L") bad(ctx, "PVT stages use L attention only");
    const double hidden = c.mlp_ratios[s] * static_cast<double>(c.embed_dims[s]);
    if (!(hidden >= 1) || hidden > kBig || hidden != std::floor(hidden))
      bad(ctx, "config mlp_ratios" + st + " does not give a whole hidden size");
  }
  if (c.family == "pvt") {
    if (c.patch_sizes.size() != n || c.sr_ratios.size() != n) bad(ctx, "config patch_sizes / sr_ratios length differs from depths");
    int64_t side = c.img_size;
    for (size_t s = 0; s < n; ++s) {
      in_range(c.patch_sizes[s], "patch_sizes");
      in_range(c.sr_ratios[s], "sr_ratios");
      if (side % c.patch_sizes[s] != 0) bad(ctx, "config img_size is not divisible by the patch sizes");
      side /= c.patch_sizes[s];
      if (c.sr_ratios[s] > side) bad(ctx, "config sr_ratio of stage " + std::to_string(s + 1) + " exceeds its resolution");
    }
  } else {
    in_range(c.patch_size, "patch_size");
    in_range(c.window_size, "window_size");
    in_range(c.window_size_softmax, "window_size_softmax");
    for (size_t s = 0; s + 1 < n; ++s)
      if (c.embed_dims[s + 1] != 2 * c.embed_dims[s]) bad(ctx, "Swin embed_dims must double from stage to stage");
    if (c.img_size % (c.patch_size << (n - 1)) != 0)
      bad(ctx, "config img_size is not divisible by patch_size * 2^(stages-1)");
    for (size_t s = 0; s < n; ++s) {
      int64_t res = stage_resolutions(c)[s], w = swin_stage_window(c, s);
      if (res % w != 0)
        bad(ctx, "Swin stage " + std::to_string(s + 1) + " resolution " + std::to_string(res) +
                     " is not a multiple of its window " + std::to_string(w));
      // Softmax blocks expand their (2w-1)^2 bias table to heads x t x t floats
      // and build a windows x t x t mask (t = w*w): a small table in the file
      // must not buy gigabytes. The released models need under a million floats.
      constexpr int64_t kMaxTableFloats = int64_t{1} << 26;
      const int64_t t = w * w, windows = res > w ? (res / w) * (res / w) : 0;
      if (c.attn_types[s] == "S" && (t > (int64_t{1} << 13) || c.num_heads[s] > kMaxTableFloats / (t * t) ||
                                     windows > kMaxTableFloats / (t * t)))
        bad(ctx, "Swin stage " + std::to_string(s + 1) + ": softmax window " + std::to_string(w) + " with " +
                     std::to_string(c.num_heads[s]) + " heads needs attention tables over " +
                     std::to_string(kMaxTableFloats) + " floats");
    }
  }
}

const std::vector<std::pair<std::string, ModelConfig>> &presets() {
  static const std::vector<std::pair<std::string, ModelConfig>> p = {
      {"pola_pvt_tiny", pvt({2, 2, 2, 2})},
      {"pola_pvt_small", pvt({3, 4, 6, 3})},
      {"pola_pvt_medium", pvt({3, 4, 18, 3})},
      {"pola_pvt_large", pvt({3, 8, 27, 3})},
      {"pola_swin_t", swin(96, {2, 2, 6, 2}, {3, 6, 12, 24}, 224)},
      {"pola_swin_s", swin(96, {2, 2, 18, 2}, {3, 6, 12, 24}, 224)},
      {"pola_swin_b", swin(128, {2, 2, 18, 2}, {4, 8, 16, 32}, 224)},
      {"pola_swin_b_384", swin(128, {2, 2, 18, 2}, {4, 8, 16, 32}, 384)},
  };
  return p;
}

const ModelConfig *find_preset(const std::string &name) {
  for (const auto &p : presets())
    if (p.first == name) return &p.second;
  return nullptr;
}

std::string arch_name(const ModelConfig &c) {
  for (const auto &p : presets())
    if (config_differences(p.second, c).empty()) return p.first;
  return "custom";
}

std::vector<std::string> config_differences(const ModelConfig &a, const ModelConfig &b) {
  Json ja = config_to_json(a), jb = config_to_json(b);
  std::vector<std::string> diffs;
  for (auto it = ja.begin(); it != ja.end(); ++it) {
    auto other = jb.find(it.key());
    if (other == jb.end()) diffs.push_back(it.key() + ": " + it.value().dump() + " vs (absent)");
    else if (*other != it.value()) diffs.push_back(it.key() + ": " + it.value().dump() + " vs " + other->dump());
  }
  for (auto it = jb.begin(); it != jb.end(); ++it)
    if (!ja.contains(it.key())) diffs.push_back(it.key() + ": (absent) vs " + it.value().dump());
  return diffs;
}

std::vector<int64_t> stage_resolutions(const ModelConfig &c) {
  std::vector<int64_t> r;
  int64_t side = c.img_size;
  for (size_t s = 0; s < c.num_stages(); ++s) {
    if (c.family == "pvt") side /= (s < c.patch_sizes.size() && c.patch_sizes[s] > 0 ? c.patch_sizes[s] : 1);
    else side = s == 0 ? c.img_size / (c.patch_size > 0 ? c.patch_size : 1) : side / 2;
    r.push_back(side);
  }
  return r;
}

int64_t swin_stage_window(const ModelConfig &c, size_t s) {
  int64_t res = stage_resolutions(c)[s];
  int64_t w = c.attn_types[s] == "L" ? c.window_size : c.window_size_softmax;
  return res <= w ? res : w;
}

std::vector<TensorSpec> expected_tensors(const ModelConfig &c) {
  check_config(c, "config");
  using Use = TensorSpec::Use;
  std::vector<TensorSpec> t;
  auto add = [&](std::string name, std::vector<int64_t> shape, Use use = Use::Required) {
    t.push_back({std::move(name), std::move(shape), use});
  };
  auto linear = [&](const std::string &p, int64_t out, int64_t in, bool bias = true) {
    add(p + ".weight", {out, in});
    if (bias) add(p + ".bias", {out});
  };
  auto norm = [&](const std::string &p, int64_t dim) {
    add(p + ".weight", {dim});
    add(p + ".bias", {dim});
  };
  // The polarity-attention parameters common to both families (SPEC section 3).
  auto pola_attn = [&](const std::string &p, int64_t dim, int64_t heads, int64_t kv_tokens) {
    const int64_t d = dim / heads, k = c.kernel_size;
    linear(p + ".proj", dim, dim);
    add(p + ".dwc.weight", {d, 1, k, k});
    add(p + ".dwc.bias", {d});
    add(p + ".power", {1, heads, 1, d});
    add(p + ".scale", {1, 1, dim});
    add(p + ".positional_encoding", {1, kv_tokens, dim});
  };
  auto mlp = [&](const std::string &p, int64_t dim, double ratio) {
    const auto hidden = static_cast<int64_t>(ratio * static_cast<double>(dim));
    linear(p + ".fc1", hidden, dim);
    linear(p + ".fc2", dim, hidden);
  };
  const std::vector<int64_t> res = stage_resolutions(c);
  const size_t n = c.num_stages();

  if (c.family == "pvt") {
    for (size_t s = 0; s < n; ++s) {
      const std::string i = std::to_string(s + 1);
      const int64_t dim = c.embed_dims[s], prev = s == 0 ? c.in_chans : c.embed_dims[s - 1];
      const int64_t p = c.patch_sizes[s], r = c.sr_ratios[s], tokens = res[s] * res[s];
      const int64_t kv_side = res[s] / r; // conv r x r, stride r, no padding
      add("patch_embed" + i + ".proj.weight", {dim, prev, p, p});
      add("patch_embed" + i + ".proj.bias", {dim});
      norm("patch_embed" + i + ".norm", dim);
      add("pos_embed" + i, {1, tokens, dim});
      for (int64_t j = 0; j < c.depths[s]; ++j) {
        const std::string b = "block" + i + "." + std::to_string(j);
        norm(b + ".norm1", dim);
        linear(b + ".attn.qg", 2 * dim, dim);
        linear(b + ".attn.kv", 2 * dim, dim);
        pola_attn(b + ".attn", dim, c.num_heads[s], kv_side * kv_side);
        if (r > 1) {
          add(b + ".attn.sr.weight", {dim, dim, r, r});
          add(b + ".attn.sr.bias", {dim});
          norm(b + ".attn.norm", dim);
        }
        norm(b + ".norm2", dim);
        mlp(b + ".mlp", dim, c.mlp_ratios[s]);
      }
    }
    const int64_t last = c.embed_dims.back();
    add("norm.weight", {last}, Use::Optional); // unused by the model (SPEC section 4)
    add("norm.bias", {last}, Use::Optional);
    linear("head", c.num_classes, last);
    return t;
  }

  const int64_t p = c.patch_size;
  add("patch_embed.proj.weight", {c.embed_dims[0], c.in_chans, p, p});
  add("patch_embed.proj.bias", {c.embed_dims[0]});
  norm("patch_embed.norm", c.embed_dims[0]);
  for (size_t s = 0; s < n; ++s) {
    const int64_t dim = c.embed_dims[s], heads = c.num_heads[s];
    const int64_t w = swin_stage_window(c, s), ww = w * w, windows = (res[s] / w) * (res[s] / w);
    const bool can_shift = res[s] > w;
    for (int64_t j = 0; j < c.depths[s]; ++j) {
      const std::string b = "layers." + std::to_string(s) + ".blocks." + std::to_string(j);
      norm(b + ".norm1", dim);
      if (c.attn_types[s] == "L") {
        linear(b + ".attn.qkvg", 4 * dim, dim);
        pola_attn(b + ".attn", dim, heads, ww);
      } else {
        linear(b + ".attn.qkv", 3 * dim, dim);
        linear(b + ".attn.proj", dim, dim);
        add(b + ".attn.relative_position_bias_table", {(2 * w - 1) * (2 * w - 1), heads});
        add(b + ".attn.relative_position_index", {ww, ww}, Use::Dropped);
      }
      if (can_shift && j % 2 == 1) add(b + ".attn_mask", {windows, ww, ww}, Use::Dropped);
      norm(b + ".norm2", dim);
      mlp(b + ".mlp", dim, c.mlp_ratios[s]);
    }
    if (s + 1 < n) {
      const std::string d = "layers." + std::to_string(s) + ".downsample";
      norm(d + ".norm", 4 * dim);
      linear(d + ".reduction", 2 * dim, 4 * dim, /*bias=*/false);
    }
  }
  norm("norm", c.embed_dims.back());
  linear("head", c.num_classes, c.embed_dims.back());
  return t;
}

Json preprocess_for(const ModelConfig &c) {
  Json p;
  p["input_size"] = c.img_size;
  // SPEC section 7: 224 models resize to 256 then crop; 384 models resize
  // straight to 384. Other sizes follow the 224 rule (resize = 256/224 x input).
  const int64_t resize = c.img_size >= 384 ? c.img_size : (c.img_size * 256 + 112) / 224;
  p["resize"] = resize;
  p["crop"] = c.img_size;
  p["interpolation"] = "bicubic";
  if (c.in_chans == 1) {
    p["mean"] = {0.449};
    p["std"] = {0.226};
  } else {
    p["mean"] = {0.485, 0.456, 0.406};
    p["std"] = {0.229, 0.224, 0.225};
  }
  p["channels"] = c.in_chans;
  return p;
}

} // namespace pola::weights
