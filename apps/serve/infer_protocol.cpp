#include "infer_protocol.h"

#include "endpoints.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "http_error.h"

namespace pola::serve {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string &message) { throw HttpError(400, message); }

std::string shape_text(const std::vector<long long> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Where the parser is: one frame per open object or array, named by the key
// it hangs under ("[]" for an array element), so the numbers of
// inputs[*].data can be taken as they stream by instead of becoming a JSON
// tree of 16-byte values (a 1.5 MB image would otherwise take ~10x that).
struct Frame {
  bool is_object;
  std::string name;
  std::string last_key;
};

class DataCollector {
 public:
  DataCollector(std::vector<float> &out, size_t max_values) : out_(out), max_values_(max_values) {}

  bool operator()(int depth, json::parse_event_t event, json &parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: {
        // A request nests a few levels; a body of brackets alone would
        // otherwise build a tree of millions of levels (~100 bytes each).
        if (depth > kMaxDepth) bad("the request nests deeper than " + std::to_string(kMaxDepth) + " levels");
        const std::string name =
            stack_.empty() ? "" : (stack_.back().is_object ? stack_.back().last_key : std::string("[]"));
        stack_.push_back({event == json::parse_event_t::object_start, name, {}});
        if (in_data() && stack_.size() > kDataFrame + 1 + 3)
          bad("inputs[0].data is nested deeper than the 4 dimensions of [N, C, H, W]");
        return true;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack_.empty()) stack_.pop_back();
        return true;
      case json::parse_event_t::key:
        if (!stack_.empty() && parsed.is_string()) stack_.back().last_key = parsed.get<std::string>();
        return true;
      case json::parse_event_t::value:
        if (!in_data() || stack_.back().is_object) return true;
        take(parsed);
        return false;  // consumed: not kept in the tree
    }
    return true;
  }

  bool saw_data() const { return saw_data_; }

 private:
  static constexpr size_t kDataFrame = 3;  // root {}, "inputs" [], element {}, "data" []
  static constexpr int kMaxDepth = 32;

  bool in_data() {
    if (stack_.size() <= kDataFrame) return false;
    const bool yes = stack_[0].is_object && !stack_[1].is_object && stack_[1].name == "inputs" &&
                     stack_[2].is_object && !stack_[3].is_object && stack_[3].name == "data";
    if (yes) saw_data_ = true;
    return yes;
  }

  void take(const json &v) {
    if (!v.is_number())
      bad("inputs[0].data holds " + std::string(v.type_name()) + " " + v.dump() + " at position " +
          std::to_string(out_.size()) + "; FP32 data must be numbers");
    if (out_.size() >= max_values_)
      bad("inputs[0].data holds more than " + std::to_string(max_values_) + " values, more images than one request "
          "may hold (--max-queue)");
    const double d = v.get<double>();
    const float f = static_cast<float>(d);
    if (!std::isfinite(f))
      bad("inputs[0].data[" + std::to_string(out_.size()) + "] = " + v.dump() + " is not a finite FP32 value");
    out_.push_back(f);
  }

  std::vector<float> &out_;
  size_t max_values_;
  std::vector<Frame> stack_;
  bool saw_data_ = false;
};

const json &field(const json &obj, const char *key, const std::string &where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + " has no \"" + key + "\"");
  return *it;
}

std::optional<bool> bool_parameter(const json &obj, const char *key, const std::string &where) {
  auto p = obj.find("parameters");
  if (p == obj.end()) return std::nullopt;
  if (!p->is_object()) bad(where + ".parameters must be an object");
  auto it = p->find(key);
  if (it == p->end()) return std::nullopt;
  if (!it->is_boolean()) bad(where + ".parameters." + key + " must be true or false");
  return it->get<bool>();
}

std::vector<long long> parse_shape(const json &input, const polaformer::Model &model, int max_rows) {
  const auto shape = model.input_shape();
  const json &s = field(input, "shape", "inputs[0]");
  const std::string expected = "[N, " + std::to_string(shape.channels) + ", H, W] (N images, NCHW; e.g. H = W = " +
                               std::to_string(shape.height) + ")";
  if (!s.is_array() || s.size() != 4) bad("inputs[0].shape is " + s.dump() + "; this model takes " + expected);
  std::vector<long long> dims;
  for (const auto &d : s) {
    if (!d.is_number_integer()) bad("inputs[0].shape is " + s.dump() + "; dimensions must be integers");
    dims.push_back(d.get<long long>());
  }
  if (dims[1] != shape.channels) bad("inputs[0].shape is " + shape_text(dims) + "; this model takes " + expected);
  if (dims[2] < 1 || dims[3] < 1 || dims[2] > 65535 || dims[3] > 65535)
    bad("inputs[0].shape is " + shape_text(dims) + "; H and W must be from 1 to 65535");
  try {
    model.check_size(static_cast<int>(dims[2]), static_cast<int>(dims[3]));
  } catch (const polaformer::Error &e) {
    bad("inputs[0].shape is " + shape_text(dims) + ": " + e.what());
  }
  if (dims[0] < 1 || dims[0] > max_rows)
    bad("inputs[0].shape asks for " + std::to_string(dims[0]) + " images; one request holds 1.." +
        std::to_string(max_rows) + " (--max-queue)");
  return dims;
}

size_t parse_header_length(const std::string &text, size_t body_size) {
  size_t n = 0;
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    bad("Inference-Header-Content-Length is '" + text + "', not a byte count");
  n = std::stoull(text);
  if (n > body_size)
    bad("Inference-Header-Content-Length is " + text + " but the body holds only " + std::to_string(body_size) +
        " bytes");
  return n;
}


} // namespace

InferRequest parse_infer_request(std::string body, const std::string &binary_header_length,
                                 const polaformer::Model &model, int max_rows) {
  InferRequest r;
  const bool binary = !binary_header_length.empty();
  const size_t json_size = binary ? parse_header_length(binary_header_length, body.size()) : body.size();
  // Each JSON number takes at least two bytes with its separator: the data
  // cannot hold more values than this, whatever shape the request names.
  const size_t max_values = json_size / 2 + 1;
  std::vector<float> data;  // inputs[0].data, as it streams by
  DataCollector collect(data, max_values);
  json root;
  try {
    root = json::parse(body.begin(), body.begin() + static_cast<ptrdiff_t>(json_size), std::ref(collect));
  } catch (const json::exception &e) {  // parse_error, or out_of_range for a number like 1e400
    bad(std::string("the request is not valid JSON: ") + e.what());
  }
  if (!root.is_object()) bad("the request must be a JSON object with \"inputs\", got " + std::string(root.type_name()));
  if (auto id = root.find("id"); id != root.end()) {
    if (!id->is_string()) bad("\"id\" must be a string");
    r.id = *id;
  }
  const json &inputs = field(root, "inputs", "the request");
  if (!inputs.is_array() || inputs.size() != 1)
    bad("\"inputs\" must be an array of one tensor (this model has one input, \"" + std::string(kInputName) + "\")");
  const json &input = inputs[0];
  if (!input.is_object()) bad("inputs[0] must be an object with name, shape, datatype and data");
  const json &name = field(input, "name", "inputs[0]");
  if (!name.is_string() || name.get<std::string>() != kInputName)
    bad("inputs[0].name is " + name.dump() + "; this model's input is \"" + kInputName + "\"");
  const json &datatype = field(input, "datatype", "inputs[0]");
  if (!datatype.is_string() || datatype.get<std::string>() != "FP32")
    bad("inputs[0].datatype is " + datatype.dump() + "; this model takes \"FP32\"");
  const auto dims = parse_shape(input, model, max_rows);
  r.rows = static_cast<int>(dims[0]);
  r.height = static_cast<int>(dims[2]);
  r.width = static_cast<int>(dims[3]);
  const size_t want = static_cast<size_t>(r.rows) * static_cast<size_t>(dims[1] * dims[2] * dims[3]);

  size_t binary_size = 0;
  if (auto p = input.find("parameters"); p != input.end() && p->is_object() && p->contains("binary_data_size")) {
    const json &b = (*p)["binary_data_size"];
    if (!b.is_number_unsigned()) bad("inputs[0].parameters.binary_data_size must be a byte count");
    binary_size = b.get<size_t>();
    if (!binary) bad("inputs[0] has binary_data_size but the request has no Inference-Header-Content-Length header");
  }
  if (binary && binary_size > 0) {
    if (collect.saw_data()) bad("inputs[0] has both \"data\" and binary_data_size; give one");
    if (binary_size != want * sizeof(float))
      bad("inputs[0].parameters.binary_data_size is " + std::to_string(binary_size) + " bytes; shape " +
          shape_text(dims) + " of FP32 takes " + std::to_string(want * sizeof(float)));
    if (body.size() - json_size != binary_size)
      bad("the body holds " + std::to_string(body.size() - json_size) + " bytes after the JSON header; inputs[0] "
          "declares " + std::to_string(binary_size));
    // Little-endian, as the extension says (and this machine is). NaN and Inf
    // are the engine's to refuse, with the message every door gives.
    body.erase(0, json_size);  // the tensor to the start of the buffer: no second buffer
    r.input = ImageData(std::move(body));
  } else {
    if (binary && body.size() != json_size)
      bad("the body has " + std::to_string(body.size() - json_size) + " bytes after the JSON header but no input "
          "declares binary_data_size");
    if (!collect.saw_data()) bad("inputs[0] has no \"data\" array (nor binary_data_size)");
    if (data.size() != want)
      bad("inputs[0].data holds " + std::to_string(data.size()) + " values; shape " + shape_text(dims) +
          " needs " + std::to_string(want));
    r.input = ImageData(std::move(data));
  }

  r.binary_output = bool_parameter(root, "binary_data_output", "the request").value_or(false);
  if (auto outs = root.find("outputs"); outs != root.end()) {
    if (!outs->is_array()) bad("\"outputs\" must be an array");
    for (size_t i = 0; i < outs->size(); ++i) {
      const json &o = (*outs)[i];
      const std::string where = "outputs[" + std::to_string(i) + "]";
      if (!o.is_object()) bad(where + " must be an object with a name");
      const json &n = field(o, "name", where);
      if (!n.is_string() || n.get<std::string>() != kOutputName)
        bad(where + ".name is " + n.dump() + "; this model's output is \"" + kOutputName + "\"");
      if (auto b = bool_parameter(o, "binary_data", where)) r.binary_output = *b;
    }
  }
  return r;
}

InferAnswer make_infer_answer(const std::string &model_name, const InferRequest &request,
                              const std::vector<float> &logits, int classes) {
  json output{{"name", kOutputName}, {"datatype", "FP32"}, {"shape", {request.rows, classes}}};
  if (request.binary_output) {
    output["parameters"] = {{"binary_data_size", logits.size() * sizeof(float)}};
  } else {
    // float -> double is exact, and the shortest text of that double reads
    // back to the same float: the client gets the engine's bits.
    json data = json::array();
    for (float v : logits) data.push_back(static_cast<double>(v));
    output["data"] = std::move(data);
  }
  json root{{"model_name", model_name}, {"outputs", json::array({output})}};
  if (request.id) root["id"] = *request.id;
  InferAnswer a;
  a.body = root.dump();
  if (request.binary_output) {
    a.binary_header_length = a.body.size();
    a.body.append(reinterpret_cast<const char *>(logits.data()), logits.size() * sizeof(float));
    a.content_type = "application/octet-stream";
  } else {
    a.content_type = "application/json";
  }
  return a;
}

json model_metadata(const std::string &name, const polaformer::Model &model) {
  const auto s = model.input_shape();
  json info = json::parse(model.info_json());
  info["precision"] = model.precision(); // what --precision resolved to on this CPU
  info.erase("path");  // where the server keeps its files is no client's business
  // H and W are -1: any size the model runs at is taken (the model's own
  // size is in pola.preprocess).
  return {{"name", name},
          {"versions", json::array({kModelVersion})},
          {"platform", "polaformer"},
          {"inputs", json::array({{{"name", kInputName}, {"datatype", "FP32"}, {"shape", {-1, s.channels, -1, -1}}}})},
          {"outputs", json::array({{{"name", kOutputName}, {"datatype", "FP32"}, {"shape", {-1, model.num_classes()}}}})},
          {"pola", info}};
}

} // namespace pola::serve
