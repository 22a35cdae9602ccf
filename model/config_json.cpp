#include "model/config_json.h"

#include <cmath>

#include "model/family.h"

namespace pola {
namespace model_detail {

const Json &ConfigJsonReader::need(const char *key) const {
  auto it = j_.find(key);
  if (it == j_.end()) bad_config(context_, std::string("config has no '") + key + "'");
  return *it;
}

// Integers only: get<int64_t>() would truncate 16.5 to 16, and casting a
// float beyond int64 range (1e300) is undefined behaviour.
int64_t ConfigJsonReader::need_int(const char *key) const {
  const Json &v = need(key);
  if (!v.is_number_integer()) bad_config(context_, std::string("config '") + key + "' is not an integer");
  return v.get<int64_t>();
}

std::vector<int64_t> ConfigJsonReader::need_ints(const char *key) const {
  const Json &v = need(key);
  if (!v.is_array()) bad_config(context_, std::string("config '") + key + "' is not a list");
  for (const auto &e : v)
    if (!e.is_number_integer()) bad_config(context_, std::string("config '") + key + "' holds a non-integer");
  return v.get<std::vector<int64_t>>();
}

std::vector<int64_t> ConfigJsonReader::need_stage_ints(const char *key, size_t stages,
                                                       const char *length_error) const {
  std::vector<int64_t> v = need_ints(key);
  if (v.size() != stages) bad_config(context_, length_error);
  return v;
}

} // namespace model_detail

namespace {

using model_detail::Json;

Json number_json(double x) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) return Json(static_cast<int64_t>(x));
  return Json(x);
}

AttentionKind attention_kind(const std::string &letter) {
  if (letter == "L") return AttentionKind::polarity;
  if (letter == "S") return AttentionKind::softmax_window;
  return AttentionKind::unknown; // refused by check_config, in its place among the stage checks
}

} // namespace

Json config_to_json(const ModelConfig &c) {
  Json j;
  j["family"] = family_name(c.family);
  j["img_size"] = c.img_size;
  j["in_chans"] = c.in_chans;
  j["num_classes"] = c.num_classes;
  Json dims = Json::array(), depths = Json::array(), heads = Json::array(), ratios = Json::array(),
       attn = Json::array();
  for (const StageConfig &s : c.stages) {
    dims.push_back(s.dim);
    depths.push_back(s.depth);
    heads.push_back(s.heads);
    ratios.push_back(number_json(s.mlp_ratio));
    attn.push_back(std::string(1, static_cast<char>(s.attn)));
  }
  j["embed_dims"] = dims;
  j["depths"] = depths;
  j["num_heads"] = heads;
  j["mlp_ratios"] = ratios;
  j["attn_types"] = attn;
  j["alpha"] = number_json(c.alpha);
  j["kernel_size"] = c.kernel_size;
  model_detail::family_rules(c.family).write_json(c, j);
  return j;
}

ModelConfig config_from_json(const Json &j, const std::string &context) {
  using model_detail::bad_config;
  if (!j.is_object()) bad_config(context, "config is not a JSON object");
  const model_detail::ConfigJsonReader in(j, context);
  ModelConfig c;
  try {
    const std::string family = in.need("family").get<std::string>();
    const model_detail::FamilyRules *rules = model_detail::find_family(family);
    // Known first: which keys the config must have depends on it.
    if (!rules) bad_config(context, "config family '" + family + "' is not " + model_detail::family_names("or"));
    c.family = rules->family;
    c.img_size = in.need_int("img_size");
    c.in_chans = in.need_int("in_chans");
    c.num_classes = in.need_int("num_classes");
    const auto dims = in.need_ints("embed_dims");
    const auto depths = in.need_ints("depths");
    const auto heads = in.need_ints("num_heads");
    const auto ratios = in.need("mlp_ratios").get<std::vector<double>>();
    const auto attn = in.need("attn_types").get<std::vector<std::string>>();
    c.alpha = in.need("alpha").get<double>();
    c.kernel_size = in.need_int("kernel_size");
    const size_t n = depths.size();
    if (dims.size() != n || heads.size() != n || ratios.size() != n || attn.size() != n)
      bad_config(context, "config lists (embed_dims, depths, num_heads, mlp_ratios, attn_types) differ in length");
    c.stages.resize(n);
    for (size_t i = 0; i < n; ++i) {
      StageConfig &s = c.stages[i];
      s.dim = dims[i];
      s.depth = depths[i];
      s.heads = heads[i];
      s.mlp_ratio = ratios[i];
      s.attn = attention_kind(attn[i]);
    }
    rules->read_json(in, c);
  } catch (const nlohmann::json::exception &e) {
    bad_config(context, std::string("config has a value of the wrong type: ") + e.what());
  }
  check_config(c, context);
  return c;
}

} // namespace pola
