// The image preprocessing a model file prescribes (its `preprocess`
// metadata, weights/FORMAT.md), checked against what the model takes. Shared
// by the C API and the `pola` subcommands that read images, so both decode an
// image the same way. Header-only so apps/ can use it without linking the
// public library.
#pragma once

#include <string>

#include "engine/model.h"
#include "engine/preprocess/preprocess.h"
#include "weights/error.h"

namespace pola::api {

// Throws pola::InputError naming `model_path` when the metadata is absent,
// malformed, or disagrees with the model's input (size or channels).
inline preprocess::PreprocessSpec model_image_spec(const Model &model, const std::string &model_path) {
  const auto &meta = model.metadata();
  auto it = meta.find("preprocess");
  if (it == meta.end())
    throw InputError(model_path + ": the model has no 'preprocess' metadata, so images cannot be prepared for it "
                                  "(feed preprocessed NCHW arrays instead)");
  preprocess::PreprocessSpec spec;
  try {
    spec = preprocess::PreprocessSpec::from_json(it->second);
  } catch (const InputError &e) {
    throw InputError(model_path + ": bad 'preprocess' metadata: " + e.what());
  }
  const auto &cfg = model.config();
  if (spec.crop != cfg.img_size || spec.channels != cfg.in_chans)
    throw InputError(model_path + ": 'preprocess' metadata yields " + std::to_string(spec.channels) + " x " +
                     std::to_string(spec.crop) + " x " + std::to_string(spec.crop) + " but the model takes " +
                     std::to_string(cfg.in_chans) + " x " + std::to_string(cfg.img_size) + " x " +
                     std::to_string(cfg.img_size));
  return spec;
}

} // namespace pola::api
