#include "engine/model_config.h"

#include <nlohmann/json.hpp>

#include "weights/error.h"

namespace pola {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string &where, const std::string &what) {
  throw InputError(where + ": model config: " + what);
}

int get_int(const json &j, const char *key, const std::string &where, int lo, int hi) {
  if (!j.contains(key)) fail(where, std::string("missing key '") + key + "'");
  const json &v = j.at(key);
  if (!v.is_number_integer()) fail(where, std::string("'") + key + "' must be an integer");
  long long x = v.get<long long>();
  if (x < lo || x > hi)
    fail(where, std::string("'") + key + "' = " + std::to_string(x) + " out of range [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(x);
}

std::vector<double> get_list(const json &j, const char *key, const std::string &where,
                             size_t n, double lo, double hi, bool integers) {
  if (!j.contains(key)) fail(where, std::string("missing key '") + key + "'");
  const json &v = j.at(key);
  if (!v.is_array() || (n && v.size() != n))
    fail(where, std::string("'") + key + "' must be a list" +
                    (n ? " of " + std::to_string(n) + " numbers" : ""));
  std::vector<double> out;
  for (const auto &e : v) {
    if (!e.is_number() || (integers && !e.is_number_integer()))
      fail(where, std::string("'") + key + "' has a non-" + (integers ? "integer" : "number") +
                      " entry");
    double x = e.get<double>();
    if (!(x >= lo && x <= hi))
      fail(where, std::string("'") + key + "' entry " + std::to_string(x) + " out of range");
    out.push_back(x);
  }
  return out;
}

} // namespace

ModelConfig parse_model_config(const std::string &text, const std::string &arch,
                               const std::string &where) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail(where, "not a JSON object");
  ModelConfig c;
  c.arch = arch.empty() ? "custom" : arch;
  if (!j.contains("family") || !j["family"].is_string()) fail(where, "missing 'family'");
  std::string fam = j["family"];
  if (fam == "pvt") c.family = Family::pvt;
  else if (fam == "swin") c.family = Family::swin;
  else fail(where, "unknown family '" + fam + "' (expected pvt or swin)");

  c.img_size = get_int(j, "img_size", where, 1, 4096);
  c.in_chans = get_int(j, "in_chans", where, 1, 16);
  c.num_classes = get_int(j, "num_classes", where, 1, 1000000);
  c.kernel_size = get_int(j, "kernel_size", where, 1, 31);
  if (c.kernel_size % 2 == 0) fail(where, "'kernel_size' must be odd");
  if (!j.contains("alpha") || !j["alpha"].is_number()) fail(where, "missing 'alpha'");
  c.alpha = j["alpha"].get<double>();
  if (!(c.alpha >= 0 && c.alpha <= 64)) fail(where, "'alpha' out of range");

  auto depths = get_list(j, "depths", where, 0, 0, 1000, true);
  size_t ns = depths.size();
  if (ns < 1 || ns > 8) fail(where, "'depths' must list 1..8 stages");
  auto dims = get_list(j, "embed_dims", where, ns, 1, 65536, true);
  auto heads = get_list(j, "num_heads", where, ns, 1, 4096, true);
  auto mlp = get_list(j, "mlp_ratios", where, ns, 0.01, 64, false);
  if (!j.contains("attn_types") || !j["attn_types"].is_array() || j["attn_types"].size() != ns)
    fail(where, "'attn_types' must list one of \"L\"/\"S\" per stage");
  c.stages.resize(ns);
  for (size_t i = 0; i < ns; ++i) {
    auto &s = c.stages[i];
    s.depth = static_cast<int>(depths[i]);
    s.dim = static_cast<int>(dims[i]);
    s.heads = static_cast<int>(heads[i]);
    s.mlp_ratio = mlp[i];
    const json &t = j["attn_types"][i];
    if (!t.is_string() || (t != "L" && t != "S")) fail(where, "'attn_types' entries must be \"L\" or \"S\"");
    s.attn = t.get<std::string>()[0];
    if (s.dim % s.heads != 0)
      fail(where, "stage " + std::to_string(i) + ": dim " + std::to_string(s.dim) +
                      " not divisible by heads " + std::to_string(s.heads));
    if (s.attn == 'L' && (s.dim / s.heads) < 2)
      fail(where, "stage " + std::to_string(i) + ": head dim must be >= 2 for polarity attention");
    long long hidden = static_cast<long long>(s.mlp_ratio * s.dim);
    if (hidden < 1) fail(where, "stage " + std::to_string(i) + ": MLP hidden size < 1");
  }

  if (c.family == Family::pvt) {
    auto patches = get_list(j, "patch_sizes", where, ns, 1, 64, true);
    auto sr = get_list(j, "sr_ratios", where, ns, 1, 64, true);
    for (size_t i = 0; i < ns; ++i) {
      c.stages[i].patch = static_cast<int>(patches[i]);
      c.stages[i].sr_ratio = static_cast<int>(sr[i]);
      if (c.stages[i].attn != 'L') fail(where, "PVT stages must use attention type L");
    }
  } else {
    c.patch_size = get_int(j, "patch_size", where, 1, 64);
    c.window_size = get_int(j, "window_size", where, 1, 1024);
    c.window_size_softmax = j.contains("window_size_softmax")
                                ? get_int(j, "window_size_softmax", where, 1, 1024)
                                : (c.window_size > 56 ? 12 : 7);
    for (size_t i = 1; i < ns; ++i)
      if (c.stages[i].dim != 2 * c.stages[i - 1].dim)
        fail(where, "Swin stage dims must double from stage to stage");
  }

  // Geometry: every stage must have at least one token, and Swin merging
  // needs even resolutions.
  auto res = stage_resolutions(c);
  for (size_t i = 0; i < ns; ++i) {
    if (res[i] < 1)
      fail(where, "input size " + std::to_string(c.img_size) + " leaves no tokens in stage " +
                      std::to_string(i));
    if (c.family == Family::pvt && res[i] % c.stages[i].sr_ratio != 0)
      fail(where, "stage " + std::to_string(i) + " resolution " + std::to_string(res[i]) +
                      " not divisible by sr_ratio");
    if (c.family == Family::swin && i + 1 < ns && res[i] % 2 != 0)
      fail(where, "Swin stage " + std::to_string(i) + " resolution " + std::to_string(res[i]) +
                      " is odd; patch merging needs it even");
    if (c.family == Family::swin) {
      int w = c.stages[i].attn == 'L' ? c.window_size : c.window_size_softmax;
      if (res[i] > w && res[i] % w != 0)
        fail(where, "Swin stage " + std::to_string(i) + " resolution " + std::to_string(res[i]) +
                        " is not a multiple of its window " + std::to_string(w));
    }
  }
  return c;
}

std::vector<int> stage_resolutions(const ModelConfig &cfg) {
  std::vector<int> res;
  if (cfg.family == Family::pvt) {
    int r = cfg.img_size;
    for (const auto &s : cfg.stages) {
      r = r / s.patch; // conv with kernel = stride, no padding
      res.push_back(r);
    }
  } else {
    int r = cfg.img_size / cfg.patch_size;
    for (size_t i = 0; i < cfg.stages.size(); ++i) {
      res.push_back(r);
      r /= 2;
    }
  }
  return res;
}

} // namespace pola
