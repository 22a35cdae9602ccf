// The names the C API had before pola_run, kept for one release as thin
// wrappers over the calls that replace them, so programs built against the
// previous header keep running while they move. Removed in the next release
// (POLA_ABI_VERSION changes then).
#include <string>
#include <vector>

#include "guarded_call.h"
#include "model_handle.h"

using pola::api::guarded_call;
using pola::api::require;

namespace {

// A refusal found by the wrapper itself, reported as the old function's.
pola_status refuse(const char *function, const std::string &message) {
  return guarded_call(function, [&] { throw pola::InputError(message); });
}

// The old calls took an explicit size, and 0 was one to refuse; pola_run
// reads 0 x 0 as the model's own size.
bool zero_size(int height, int width) { return height == 0 || width == 0; }
std::string zero_size_message(int height, int width) {
  return "input size " + std::to_string(height) + "x" + std::to_string(width) + " is out of range";
}

pola_run_options logits_run(int batch, int height, int width) {
  pola_run_options o = pola_run_options_default();
  o.batch = batch;
  o.height = height;
  o.width = width;
  return o;
}

pola_status run_logits(pola_model *model, const float *input, int batch, int height, int width, float *logits) {
  const pola_run_options o = logits_run(batch, height, width);
  pola_run_output out = pola_run_output_default();
  out.logits = logits;
  const float *inputs[1] = {input};
  if (!input || !logits) return refuse("pola_run", "model, input and logits must not be NULL");
  return pola_run(model, &o, inputs, &out);
}

pola_status preprocess_one(const pola_model *model, const pola_image &image, float *out) {
  return pola_model_preprocess_batch(model, &image, 1, out, nullptr);
}

} // namespace

extern "C" {

POLA_API pola_status pola_model_run(pola_model *model, const float *input, int batch, float *logits) {
  return run_logits(model, input, batch, 0, 0, logits);
}

POLA_API pola_status pola_model_run_sized(pola_model *model, const float *input, int batch, int height, int width,
                                          float *logits) {
  if (zero_size(height, width)) return refuse("pola_model_run_sized", zero_size_message(height, width));
  return run_logits(model, input, batch, height, width, logits);
}

POLA_API pola_status pola_model_run_parts(pola_model *model, int parts, const float *const *inputs,
                                          const int *counts, float *const *logits) {
  if (!model || !inputs || !counts || !logits)
    return refuse("pola_model_run_parts", "model, inputs, counts and logits must not be NULL");
  if (parts < 1) return refuse("pola_model_run_parts", "parts must be at least 1");
  pola_run_options o = pola_run_options_default();
  o.batch = 0;
  o.parts = parts;
  o.part_counts = counts;
  std::vector<pola_run_output> outs(static_cast<size_t>(parts), pola_run_output_default());
  for (int i = 0; i < parts; ++i) outs[static_cast<size_t>(i)].logits = logits[i];
  return pola_run(model, &o, inputs, outs.data());
}

POLA_API pola_status pola_model_features(pola_model *model, const float *input, int batch, int height, int width,
                                         float *const *stage_out, float *pooled) {
  if (!model || !input) return refuse("pola_model_features", "model and input must not be NULL");
  if (!stage_out && !pooled)
    return refuse("pola_model_features", "ask for at least one stage or the pooled embedding");
  if (zero_size(height, width)) return refuse("pola_model_features", zero_size_message(height, width));
  pola_run_options o = logits_run(batch, height, width);
  o.outputs = pooled ? POLA_OUTPUT_POOLED : 0u;
  pola_run_output out = pola_run_output_default();
  out.pooled = pooled;
  const int stages = pola_model_num_stages(model);
  for (int i = 0; stage_out && i < stages && i < POLA_MAX_STAGES; ++i)
    if (stage_out[i]) {
      o.stage_mask |= 1u << i;
      out.stages[i] = stage_out[i];
    }
  const float *inputs[1] = {input};
  return pola_run(model, &o, inputs, &out);
}

POLA_API pola_status pola_model_run_images(pola_model *model, const char *const *image_paths, int count,
                                           float *logits) {
  if (!model || !image_paths || !logits)
    return refuse("pola_model_run_images", "model, image_paths and logits must not be NULL");
  const pola_run_options o = logits_run(count, 0, 0);
  // Before the batch is allocated and decoded.
  pola_status status = pola_run_check_memory(model, &o);
  if (status != POLA_OK) return status;
  std::vector<pola_image> images(static_cast<size_t>(count), pola_image{});
  for (int i = 0; i < count; ++i) {
    if (!image_paths[i]) return refuse("pola_model_run_images", "image_paths[" + std::to_string(i) + "] must not be NULL");
    images[static_cast<size_t>(i)].path = image_paths[i];
  }
  std::vector<float> batch;
  status = guarded_call("pola_model_run_images",
                        [&] { batch.resize(static_cast<size_t>(model->model->input_size()) * images.size()); });
  if (status != POLA_OK) return status;
  status = pola_model_preprocess_batch(model, images.data(), count, batch.data(), nullptr);
  if (status != POLA_OK) return status;
  return run_logits(model, batch.data(), count, 0, 0, logits);
}

POLA_API pola_status pola_model_preprocess_image(const pola_model *model, const char *image_path, float *out) {
  pola_image image{};
  image.path = image_path;
  return preprocess_one(model, image, out);
}

POLA_API pola_status pola_model_preprocess_image_bytes(const pola_model *model, const void *data, size_t size,
                                                       float *out) {
  pola_image image{};
  image.data = data;
  image.size = size;
  return preprocess_one(model, image, out);
}

POLA_API pola_status pola_model_preprocess_pixels(const pola_model *model, const unsigned char *pixels, int height,
                                                  int width, int channels, float *out) {
  pola_image image{};
  image.pixels = pixels;
  image.height = height;
  image.width = width;
  image.channels = channels;
  return preprocess_one(model, image, out);
}

POLA_API pola_status pola_model_memory_need(pola_model *model, int batch, int height, int width,
                                            pola_memory_need *out) {
  if (zero_size(height, width)) return refuse("pola_model_memory_need", zero_size_message(height, width));
  const pola_run_options o = logits_run(batch, height, width);
  return pola_run_memory_need(model, &o, out);
}

POLA_API pola_status pola_model_check_memory(pola_model *model, int batch, int height, int width) {
  if (zero_size(height, width)) return refuse("pola_model_check_memory", zero_size_message(height, width));
  const pola_run_options o = logits_run(batch, height, width);
  return pola_run_check_memory(model, &o);
}

} // extern "C"
