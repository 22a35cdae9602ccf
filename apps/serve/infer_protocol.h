// The Open Inference Protocol (KServe v2) REST bodies of `pola serve`:
// model metadata, and the infer request and response, with JSON `data` or the
// binary tensor extension (Inference-Header-Content-Length: the body is a JSON
// header of that many bytes followed by the raw little-endian tensors, each
// input saying its size in parameters.binary_data_size).
//
// The model has one input, "input" (FP32, [N, C, H, W], H and W any size the
// model runs at), and one output,
// "logits" (FP32, [N, classes]). Every problem in a request is an HttpError
// (400) naming the field and what was expected.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <polaformer/polaformer.hpp>

#include "image_data.h"

namespace pola::serve {

inline constexpr const char *kInputName = "input";
inline constexpr const char *kOutputName = "logits";

struct InferRequest {
  std::optional<nlohmann::json> id;  // echoed back when given
  int rows = 0;                      // N
  int height = 0, width = 0;         // H, W: any size the model runs (see Model::check_size)
  ImageData input;                   // N x C x H x W
  bool binary_output = false;        // answer the logits as a binary tensor
};

// Parses an infer request body, taking it: a binary tensor is left in it.
// `binary_header_length` is the value of the Inference-Header-Content-Length
// header (empty when absent). The images may have any height and width the
// model runs at, as in `pola run` and Python: `model.check_size` decides.
InferRequest parse_infer_request(std::string body, const std::string &binary_header_length,
                                 const polaformer::Model &model, int max_rows);

struct InferAnswer {
  std::string body;
  std::string content_type;
  std::optional<size_t> binary_header_length;  // set for binary answers
};

InferAnswer make_infer_answer(const std::string &model_name, const InferRequest &request,
                              const std::vector<float> &logits, int classes);

// GET /v2/models/{name}: name, versions, platform, inputs, outputs; plus the
// model's own description (`pola info --json`) under "pola".
nlohmann::json model_metadata(const std::string &name, const polaformer::Model &model);

} // namespace pola::serve
