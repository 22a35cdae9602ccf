// pola_model_run_parts: one engine call over several callers' image arrays
// (issue 22: the server's dynamic batches), each part getting its own logits.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "guarded_call.h"
#include "model_handle.h"

using pola::api::guarded_call;
using pola::api::require;

namespace {

// As pola_model_run's limit (c_api_run.cpp).
constexpr int64_t kMaxImages = 4096;

} // namespace

extern "C" {

POLA_API pola_status pola_model_run_parts(pola_model *model, int parts, const float *const *inputs,
                                          const int *counts, float *const *logits) {
  return guarded_call([&] {
    require(model && inputs && counts && logits, "pola_model_run_parts: model, inputs, counts and logits must not be NULL");
    require(parts >= 1, "pola_model_run_parts: parts must be at least 1");
    int64_t total = 0;
    for (int i = 0; i < parts; ++i) {
      if (counts[i] < 1)
        throw pola::InputError("pola_model_run_parts: counts[" + std::to_string(i) + "] is " +
                               std::to_string(counts[i]) + "; every part holds at least one image");
      if (!inputs[i] || !logits[i])
        throw pola::InputError("pola_model_run_parts: inputs[" + std::to_string(i) + "] and logits[" +
                               std::to_string(i) + "] must not be NULL");
      total += counts[i];
      if (total > kMaxImages)
        throw pola::InputError("pola_model_run_parts: the parts hold more than " + std::to_string(kMaxImages) +
                               " images");
    }
    const int64_t per_image = model->model->input_size();
    const int64_t classes = model->model->config().num_classes;
    // Checked before the scratch logits and the joined batch are allocated;
    // one part is run in place, so its inputs exist already.
    const int own = static_cast<int>(model->model->config().img_size);
    model->model->check_memory(static_cast<int>(total), own, own,
                               parts == 1 ? static_cast<size_t>(total * per_image) * sizeof(float) : 0);
    // Logits go to a scratch array first, so a failed run writes no part.
    std::vector<float> out(static_cast<size_t>(total * classes));
    if (parts == 1) {
      model->model->run(inputs[0], counts[0], out.data());
    } else {
      std::vector<float> batch(static_cast<size_t>(total * per_image));
      int64_t at = 0;
      for (int i = 0; i < parts; ++i) {
        std::copy(inputs[i], inputs[i] + counts[i] * per_image, batch.begin() + at * per_image);
        at += counts[i];
      }
      model->model->run(batch.data(), static_cast<int>(total), out.data());
    }
    int64_t at = 0;
    for (int i = 0; i < parts; ++i) {
      std::copy(out.begin() + at * classes, out.begin() + (at + counts[i]) * classes, logits[i]);
      at += counts[i];
    }
  });
}

} // extern "C"
