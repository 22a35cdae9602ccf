// pola_run: the one call that runs a model, whatever the size, outputs or
// parts; and what such a run needs in memory.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/memory_budget.h"
#include "guarded_call.h"
#include "model_handle.h"
#include "run_request.h"

using pola::api::guarded_call;
using pola::api::require;
using pola::api::RunRequest;

namespace {

// Where a part's outputs go, as the engine takes them.
struct PartBuffers {
  float *logits = nullptr, *pooled = nullptr;
  std::vector<float *> stages;
};

PartBuffers buffers_of(const pola_run_output &out, size_t num_stages) {
  PartBuffers b;
  b.logits = out.logits;
  b.pooled = out.pooled;
  b.stages.assign(out.stages, out.stages + num_stages);
  return b;
}

void run_into(pola::Model &model, const RunRequest &r, const float *input, PartBuffers &b) {
  pola::Model::Outputs out;
  out.logits = r.logits ? b.logits : nullptr;
  out.pooled = r.pooled ? b.pooled : nullptr;
  for (size_t i = 0; i < b.stages.size(); ++i)
    if (!(r.stage_mask >> i & 1u)) b.stages[i] = nullptr;
  out.stages = b.stages.data();
  model.run(input, r.total, r.height, r.width, out);
}

// Several parts: one batch joined from the parts' inputs, run into scratch
// outputs, then each part's rows copied to its own buffers, so a failed run
// writes none of them.
void run_parts(pola::Model &model, const RunRequest &r, const float *const *inputs,
               const std::vector<pola_run_output> &outputs) {
  const int64_t per_image = int64_t(model.config().in_chans) * r.height * r.width;
  const pola::api::OutputSizes sizes = pola::api::output_sizes(model, r);
  model.check_memory(r.plan_key(), 0);  // before the joined batch and the scratch outputs exist
  std::vector<float> batch(static_cast<size_t>(r.total * per_image));
  int64_t at = 0;
  for (size_t i = 0; i < r.counts.size(); ++i) {
    std::copy(inputs[i], inputs[i] + r.counts[i] * per_image, batch.begin() + at * per_image);
    at += r.counts[i];
  }
  const size_t n = static_cast<size_t>(r.total);
  std::vector<float> logits(n * sizes.logits), pooled(n * sizes.pooled);
  std::vector<std::vector<float>> stages(sizes.stages.size());
  PartBuffers scratch{logits.data(), pooled.data(), {}};
  for (size_t s = 0; s < stages.size(); ++s) {
    stages[s].resize(n * sizes.stages[s]);
    scratch.stages.push_back(stages[s].data());
  }
  run_into(model, r, batch.data(), scratch);
  const auto copy_rows = [](const std::vector<float> &from, size_t per, size_t first, size_t count, float *to) {
    if (per) std::copy(from.begin() + first * per, from.begin() + (first + count) * per, to);
  };
  size_t first = 0;
  for (size_t i = 0; i < r.counts.size(); ++i) {
    const size_t count = static_cast<size_t>(r.counts[i]);
    copy_rows(logits, sizes.logits, first, count, outputs[i].logits);
    copy_rows(pooled, sizes.pooled, first, count, outputs[i].pooled);
    for (size_t s = 0; s < stages.size(); ++s) copy_rows(stages[s], sizes.stages[s], first, count, outputs[i].stages[s]);
    first += count;
  }
}

} // namespace

extern "C" {

POLA_API pola_run_options pola_run_options_default(void) {
  pola_run_options o;
  o.struct_size = sizeof(pola_run_options);
  o.batch = 1;
  o.height = o.width = 0;
  o.outputs = POLA_OUTPUT_LOGITS;
  o.stage_mask = 0;
  o.parts = 1;
  o.part_counts = nullptr;
  return o;
}

POLA_API pola_run_output pola_run_output_default(void) {
  pola_run_output o;
  o.struct_size = sizeof(pola_run_output);
  o.logits = o.pooled = nullptr;
  for (float *&s : o.stages) s = nullptr;
  return o;
}

POLA_API pola_status pola_run(pola_model *model, const pola_run_options *options, const float *const *inputs,
                              const pola_run_output *outputs) {
  return guarded_call("pola_run", [&] {
    require(model && inputs && outputs, "model, inputs and outputs must not be NULL");
    const RunRequest r = pola::api::read_run_options(*model->model, options);
    std::vector<pola_run_output> outs;
    for (size_t i = 0; i < r.counts.size(); ++i) {
      if (!inputs[i]) throw pola::InputError("inputs[" + std::to_string(i) + "] must not be NULL");
      outs.push_back(pola::api::read_run_output(outputs, static_cast<int>(i), r));
    }
    const size_t stages = model->model->config().num_stages();
    if (r.counts.size() == 1) {
      PartBuffers b = buffers_of(outs[0], stages);
      run_into(*model->model, r, inputs[0], b);
    } else {
      run_parts(*model->model, r, inputs, outs);
    }
  });
}

POLA_API pola_status pola_run_memory_need(pola_model *model, const pola_run_options *options, pola_memory_need *out) {
  return guarded_call("pola_run_memory_need", [&] {
    require(model && out, "model and out must not be NULL");
    const RunRequest r = pola::api::read_run_options(*model->model, options);
    const auto need = model->model->run_memory(r.plan_key());
    const size_t available = pola::available_memory().bytes;
    *out = pola_memory_need{need.working(), need.inputs, need.outputs, need.total(), available};
  });
}

POLA_API pola_status pola_run_check_memory(pola_model *model, const pola_run_options *options) {
  return guarded_call("pola_run_check_memory", [&] {
    require(model != nullptr, "model must not be NULL");
    const RunRequest r = pola::api::read_run_options(*model->model, options);
    model->model->check_memory(r.plan_key());
  });
}

} // extern "C"
