// Safetensors header validation. The file is untrusted: lengths, shapes and
// offsets are checked against the actual size before any tensor is touched.
#include "weights/safetensors_header.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "weights/error.h"

namespace pola::weights {
namespace {

// A plain (tree-map) json: nlohmann's ordered_json finds keys by linear
// search (O(n^2) for n entries); the file's tensor order is recorded by the
// streaming pass below instead.
using Json = nlohmann::json;

// A model header is a few hundred kB; anything near this cap is not a model.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
// The header is a two-level object ({name: {dtype, shape, data_offsets}}).
// Deeper JSON is rejected while parsing, before it is built in memory.
constexpr int kMaxJsonDepth = 8;
constexpr size_t kMaxRank = 16;
// Entries (tensors) a header may list: the released models have under 1,000,
// so 100,000 leaves room for any real model and bounds the work for a hostile
// header (weights/FORMAT.md states this limit).
constexpr size_t kMaxEntries = 100000;


// Reads a JSON integer that must be a non-negative value fitting int64.
bool as_nonneg_int64(const Json &j, int64_t *out) {
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v < 0) return false;
    *out = v;
    return true;
  }
  return false;
}

// A first, streaming pass over the header text: nesting depth, duplicate and
// counted top-level names, and their order, before any tree is built. (The
// DOM parser's filter callback cannot do this: on every closing brace it
// scans the enclosing object for discarded members, so a header of n entries
// cost O(n^2), hours for a 95 MB header.)
class HeaderScan : public nlohmann::json_sax<Json> {
 public:
  std::vector<std::string> order;  // top-level names in file order
  std::string problem;             // set when the scan stops early

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override { return enter(); }
  bool start_array(std::size_t) override { return enter(); }
  bool end_object() override { return leave(); }
  bool end_array() override { return leave(); }
  bool key(string_t &name) override {
    if (depth_ != 1) return true;
    if (!seen_.insert(name).second) return stop("tensor name '" + name + "' appears more than once in the header");
    if (order.size() > kMaxEntries)  // one more than the limit: __metadata__
      return stop("header lists more than " + std::to_string(kMaxEntries) + " tensors, the most a model file may hold");
    order.push_back(name);
    return true;
  }
  bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &e) override {
    return stop(std::string("header is not valid JSON: ") + e.what());
  }

 private:
  bool enter() {
    return ++depth_ <= kMaxJsonDepth || stop("header JSON is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  bool leave() {
    --depth_;
    return true;
  }
  bool stop(std::string why) {
    if (problem.empty()) problem = std::move(why);
    return false;
  }
  int depth_ = 0;
  std::set<std::string> seen_;
};

// Parses the header text after the streaming checks above; `order` receives
// the top-level names in file order.
Json parse_json(const std::string &path, const char *begin, const char *end, std::vector<std::string> &order) {
  HeaderScan scan;
  if (!Json::sax_parse(begin, end, &scan)) fail_in_file(path, scan.problem.empty() ? "header is not valid JSON" : scan.problem);
  Json j = Json::parse(begin, end, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) fail_in_file(path, "header is not a JSON object");
  order = std::move(scan.order);
  return j;
}

} // namespace

size_t safetensors_dtype_size(const std::string &d) {
  if (d == "BOOL" || d == "U8" || d == "I8" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  if (d == "I16" || d == "U16" || d == "F16" || d == "BF16") return 2;
  if (d == "I32" || d == "U32" || d == "F32") return 4;
  if (d == "I64" || d == "U64" || d == "F64") return 8;
  return 0;
}

SafetensorsHeader parse_safetensors_header(const std::string &path, const unsigned char *bytes, uint64_t size) {
  if (size < 8)
    fail_in_file(path, "file is " + std::to_string(size) + " bytes, too small for a model file (8-byte header length missing)");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > size - 8)
    fail_in_file(path, "header length " + std::to_string(header_len) + " exceeds the file size (" + std::to_string(size) +
                   " bytes); the file is truncated or not a safetensors file");
  if (header_len > kMaxHeaderBytes)
    fail_in_file(path, "header length " + std::to_string(header_len) + " is larger than the " +
                   std::to_string(kMaxHeaderBytes >> 20) + " MB limit");
  if (header_len < 2) fail_in_file(path, "header is too short to be a JSON object");

  const char *text = reinterpret_cast<const char *>(bytes + 8);
  std::vector<std::string> order;
  Json j = parse_json(path, text, text + header_len, order);

  SafetensorsHeader h;
  h.data_start = 8 + header_len;
  const uint64_t data_size = size - h.data_start;
  h.entries.reserve(order.size());
  for (const std::string &name : order) {
    const Json &e = j.at(name);
    if (name == "__metadata__") {
      if (!e.is_object()) fail_in_file(path, "__metadata__ is not a JSON object");
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (!m.value().is_string()) fail_in_file(path, "__metadata__ value of '" + m.key() + "' is not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!e.is_object()) fail_in_file(path, "entry of tensor '" + name + "' is not a JSON object");
    auto dt = e.find("dtype");
    auto sh = e.find("shape");
    auto off = e.find("data_offsets");
    if (dt == e.end() || !dt->is_string()) fail_in_file(path, "tensor '" + name + "' has no string 'dtype'");
    if (sh == e.end() || !sh->is_array()) fail_in_file(path, "tensor '" + name + "' has no 'shape' array");
    if (off == e.end() || !off->is_array() || off->size() != 2)
      fail_in_file(path, "tensor '" + name + "' has no 'data_offsets' pair");
    SafetensorsEntry t;
    t.name = name;
    t.dtype = dt->get<std::string>();
    t.dtype_size = safetensors_dtype_size(t.dtype);
    if (t.dtype_size == 0) fail_in_file(path, "tensor '" + name + "' has unknown dtype '" + t.dtype + "'");
    if (sh->size() > kMaxRank)
      fail_in_file(path, "tensor '" + name + "' has rank " + std::to_string(sh->size()) + ", more than " + std::to_string(kMaxRank));
    t.numel = 1;
    for (const auto &d : *sh) {
      int64_t v = 0;
      if (!as_nonneg_int64(d, &v)) fail_in_file(path, "tensor '" + name + "' has a shape entry that is not a non-negative integer");
      if (v != 0 && t.numel > std::numeric_limits<int64_t>::max() / v)
        fail_in_file(path, "tensor '" + name + "' has a shape whose element count overflows");
      t.numel *= v;
      t.shape.push_back(v);
    }
    int64_t begin = 0, end = 0;
    if (!as_nonneg_int64((*off)[0], &begin) || !as_nonneg_int64((*off)[1], &end))
      fail_in_file(path, "tensor '" + name + "' has data_offsets that are not non-negative integers");
    if (begin > end) fail_in_file(path, "tensor '" + name + "' has data_offsets with begin > end");
    if (static_cast<uint64_t>(end) > data_size)
      fail_in_file(path, "tensor '" + name + "' ends at byte " + std::to_string(end) + " of the data area, which has only " +
                     std::to_string(data_size) + " bytes (file truncated?)");
    const int64_t esz = static_cast<int64_t>(t.dtype_size);
    if (t.numel > std::numeric_limits<int64_t>::max() / esz || t.numel * esz != end - begin)
      fail_in_file(path, "tensor '" + name + "' has " + std::to_string(t.numel) + " elements of " + t.dtype + " but " +
                     std::to_string(end - begin) + " bytes of data (" + std::to_string(esz) + " per element)");
    t.begin = static_cast<uint64_t>(begin);
    t.end = static_cast<uint64_t>(end);
    h.entries.push_back(std::move(t));
  }
  return h;
}

} // namespace pola::weights
