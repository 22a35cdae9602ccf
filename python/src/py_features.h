// Model.features: backbone feature maps at any input size (what a detection
// or segmentation neck consumes), through pola_run's stage and pooled outputs.
#pragma once

#include <pybind11/pybind11.h>

#include "py_model.h"

namespace polaformer_py {

// {"stage<i>": (N, C, h, w) float32 for each requested stage (1-based, as
// `pola features` names its files), "pooled": (N, C) when asked for}.
pybind11::dict model_features(PyModel &model, const pybind11::object &x, const pybind11::object &stages, bool pooled);

extern const char *kFeaturesDoc;

} // namespace polaformer_py
