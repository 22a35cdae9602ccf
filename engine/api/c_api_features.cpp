// What a model is, at its own size or another: stages, feature shapes, the
// pooled embedding, and how its plan pool has served runs.
#include <string>

#include "guarded_call.h"
#include "model_handle.h"
#include "run_request.h"

using pola::api::guarded_call;
using pola::api::require;

extern "C" {

POLA_API pola_status pola_model_check_size(const pola_model *model, int height, int width) {
  return guarded_call("pola_model_check_size", [&] {
    require(model != nullptr, "model must not be NULL");
    pola::api::check_run_size(model->model->config(), height, width);
  });
}

POLA_API int pola_model_num_stages(const pola_model *model) {
  return model ? static_cast<int>(model->model->config().num_stages()) : 0;
}

POLA_API pola_status pola_model_feature_shape(const pola_model *model, int height, int width, int stage,
                                              int *channels, int *feature_height, int *feature_width) {
  return guarded_call("pola_model_feature_shape", [&] {
    require(model != nullptr, "model must not be NULL");
    const auto shapes = model->model->feature_shapes(height, width);
    if (stage < 0 || static_cast<size_t>(stage) >= shapes.size())
      throw pola::InputError("stage " + std::to_string(stage) + " is not in 0.." +
                             std::to_string(shapes.size() - 1));
    const auto &s = shapes[static_cast<size_t>(stage)];
    if (channels) *channels = static_cast<int>(s.channels);
    if (feature_height) *feature_height = static_cast<int>(s.height);
    if (feature_width) *feature_width = static_cast<int>(s.width);
  });
}

POLA_API int pola_model_pooled_size(const pola_model *model) {
  return model ? static_cast<int>(model->model->pooled_size()) : 0;
}

POLA_API pola_status pola_model_plan_cache_stats(pola_model *model, pola_plan_cache_stats *out) {
  return guarded_call("pola_model_plan_cache_stats", [&] {
    require(model && out, "model and out must not be NULL");
    const auto s = model->model->plan_cache_stats();
    out->hits = static_cast<long long>(s.hits);
    out->misses = static_cast<long long>(s.misses);
    out->evictions = static_cast<long long>(s.evictions);
    out->idle = static_cast<long long>(s.idle);
  });
}

} // extern "C"
