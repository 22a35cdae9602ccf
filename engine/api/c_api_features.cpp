// Any input size and backbone features through the C API (polaformer.h,
// "Any input size and backbone features").
#include <string>

#include "guarded_call.h"
#include "model_handle.h"
#include "model/geometry.h"

using pola::api::guarded_call;
using pola::api::require;

namespace {

constexpr int kMaxBatch = 4096;  // as pola_model_run

void check_batch(int batch, const char *fn) {
  if (batch < 1 || batch > kMaxBatch)
    throw pola::InputError(std::string(fn) + ": batch must be in 1.." + std::to_string(kMaxBatch) + ", got " +
                           std::to_string(batch));
}

} // namespace

extern "C" {

POLA_API pola_status pola_model_check_size(const pola_model *model, int height, int width) {
  return guarded_call([&] {
    require(model != nullptr, "pola_model_check_size: model must not be NULL");
    pola::check_input_size(model->model->config(), height, width, "pola_model_check_size");
  });
}

POLA_API int pola_model_num_stages(const pola_model *model) {
  return model ? static_cast<int>(model->model->config().num_stages()) : 0;
}

POLA_API pola_status pola_model_feature_shape(const pola_model *model, int height, int width, int stage,
                                              int *channels, int *feature_height, int *feature_width) {
  return guarded_call([&] {
    require(model != nullptr, "pola_model_feature_shape: model must not be NULL");
    const auto shapes = model->model->feature_shapes(height, width);
    if (stage < 0 || static_cast<size_t>(stage) >= shapes.size())
      throw pola::InputError("pola_model_feature_shape: stage " + std::to_string(stage) + " is not in 0.." +
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

POLA_API pola_status pola_model_run_sized(pola_model *model, const float *input, int batch, int height, int width,
                                          float *logits) {
  return guarded_call([&] {
    require(model && input && logits, "pola_model_run_sized: model, input and logits must not be NULL");
    check_batch(batch, "pola_model_run_sized");
    model->model->run(input, batch, height, width, logits);
  });
}

POLA_API pola_status pola_model_features(pola_model *model, const float *input, int batch, int height, int width,
                                         float *const *stage_out, float *pooled) {
  return guarded_call([&] {
    require(model && input, "pola_model_features: model and input must not be NULL");
    require(stage_out || pooled, "pola_model_features: ask for at least one stage or the pooled embedding");
    check_batch(batch, "pola_model_features");
    model->model->features(input, batch, height, width, stage_out, pooled);
  });
}

POLA_API pola_status pola_model_plan_cache_stats(pola_model *model, pola_plan_cache_stats *out) {
  return guarded_call([&] {
    require(model && out, "pola_model_plan_cache_stats: model and out must not be NULL");
    const auto s = model->model->plan_cache_stats();
    out->hits = static_cast<long long>(s.hits);
    out->misses = static_cast<long long>(s.misses);
    out->evictions = static_cast<long long>(s.evictions);
    out->idle = static_cast<long long>(s.idle);
  });
}

} // extern "C"
