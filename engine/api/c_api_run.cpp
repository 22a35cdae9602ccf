// Running a model through the C API: raw NCHW batches and image files.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/memory_budget.h"
#include "guarded_call.h"
#include "model_handle.h"

using pola::api::guarded_call;
using pola::api::image_spec_of;
using pola::api::require;

namespace {

// Largest batch one call accepts; far beyond any sensible use, it keeps a
// wrong count from turning into a huge allocation.
constexpr int kMaxBatch = 4096;

void check_batch(int batch, const char *fn) {
  if (batch < 1 || batch > kMaxBatch)
    throw pola::InputError(std::string(fn) + ": batch must be in 1.." + std::to_string(kMaxBatch) + ", got " +
                           std::to_string(batch));
}

void run_batch(pola_model *m, const float *input, int batch, float *logits) {
  m->model->run(input, batch, logits);
}

} // namespace

extern "C" {

POLA_API pola_status pola_model_run(pola_model *model, const float *input, int batch, float *logits) {
  return guarded_call([&] {
    require(model && input && logits, "pola_model_run: model, input and logits must not be NULL");
    check_batch(batch, "pola_model_run");
    run_batch(model, input, batch, logits);
  });
}

POLA_API pola_status pola_model_preprocess_image(const pola_model *model, const char *image_path, float *out) {
  return guarded_call([&] {
    require(model && image_path && out, "pola_model_preprocess_image: model, image_path and out must not be NULL");
    const std::vector<float> x = pola::preprocess::load_and_preprocess(image_path, image_spec_of(model));
    std::copy(x.begin(), x.end(), out);
  });
}

POLA_API pola_status pola_model_run_images(pola_model *model, const char *const *image_paths, int count,
                                           float *logits) {
  return guarded_call([&] {
    require(model && image_paths && logits, "pola_model_run_images: model, image_paths and logits must not be NULL");
    check_batch(count, "pola_model_run_images");
    const auto &spec = image_spec_of(model);
    const int64_t per_image = model->model->input_size();
    const int side = static_cast<int>(model->model->config().img_size);
    model->model->check_memory(count, side, side);  // before the batch is allocated and decoded
    std::vector<float> batch(static_cast<size_t>(per_image) * static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      require(image_paths[i] != nullptr, "pola_model_run_images: image_paths[i] must not be NULL");
      const std::vector<float> x = pola::preprocess::load_and_preprocess(image_paths[i], spec);
      if (static_cast<int64_t>(x.size()) != per_image)  // model_image_spec() guarantees this
        throw std::logic_error(std::string(image_paths[i]) + ": preprocessed size disagrees with the model input");
      std::copy(x.begin(), x.end(), batch.begin() + static_cast<ptrdiff_t>(i) * per_image);
    }
    run_batch(model, batch.data(), count, logits);
  });
}

POLA_API pola_status pola_model_memory_need(pola_model *model, int batch, int height, int width,
                                            pola_memory_need *out) {
  return guarded_call([&] {
    require(model && out, "pola_model_memory_need: model and out must not be NULL");
    const auto need = model->model->run_memory(batch, height, width);
    const size_t available = pola::available_memory().bytes;
    *out = pola_memory_need{need.working(), need.inputs, need.outputs, need.total(), available};
  });
}

POLA_API pola_status pola_model_check_memory(pola_model *model, int batch, int height, int width) {
  return guarded_call([&] {
    require(model != nullptr, "pola_model_check_memory: model must not be NULL");
    model->model->check_memory(batch, height, width);
  });
}

} // extern "C"
