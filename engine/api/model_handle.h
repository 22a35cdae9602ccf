// What a pola_model handle owns: the engine model plus what the C API hands
// out by pointer (class names as C strings) or needs per image (the
// preprocessing the model file prescribes).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/preprocess/preprocess.h"
#include "weights/error.h"

struct pola_model {
  std::string path;
  std::unique_ptr<pola::Model> model;
  std::vector<std::string> class_names;
  // Absent when the metadata cannot drive image preprocessing; raw NCHW runs
  // still work and image calls report image_spec_error.
  std::optional<pola::preprocess::PreprocessSpec> image_spec;
  std::string image_spec_error;
  // pola_model_info_json's answer, made on first call (mutable: the call is
  // a const query that caches), guarded by a once-flag for concurrent calls.
  mutable std::string info_json;
  mutable std::once_flag info_once;
};

namespace pola::api {

// The image preprocessing of `m`, or InputError saying why its metadata cannot drive it.
inline const preprocess::PreprocessSpec &image_spec_of(const pola_model *m) {
  if (!m->image_spec) throw InputError(m->image_spec_error);
  return *m->image_spec;
}

} // namespace pola::api
