// A pola_run call's options and outputs, read once and checked: the one
// place that knows how struct_size lets the option and output structs grow,
// and what a run may be asked for. pola_run, pola_run_memory_need and
// pola_run_check_memory all start here, so they refuse the same things with
// the same words.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/model.h"
#include "polaformer/polaformer.h"

namespace pola::api {

// Largest batch one call accepts; far beyond any sensible use, it keeps a
// wrong count from turning into a huge allocation.
constexpr int kMaxRunImages = 4096;

struct RunRequest {
  std::vector<int> counts;  // images per part (one entry without part_counts)
  int total = 0;            // their sum, 1..kMaxRunImages
  int height = 0, width = 0;
  bool logits = false, pooled = false;
  unsigned stage_mask = 0;
  PlanKey plan_key() const;
};

// The caller's options (NULL: the defaults), checked against `model`:
// batch or part counts, size, outputs. Throws InputError naming the field.
RunRequest read_run_options(const Model &model, const pola_run_options *options);

// outputs[part], copied whatever struct_size the caller was built with
// (fields it does not know stay NULL); throws InputError for a missing
// buffer the options ask for.
pola_run_output read_run_output(const pola_run_output *outputs, int part, const RunRequest &request);

// Floats per image of each output the request asks for, in the order the
// run writes them: logits, pooled, then each asked-for stage.
struct OutputSizes {
  size_t logits = 0, pooled = 0;
  std::vector<size_t> stages;  // one per model stage; 0 when not asked for
};
OutputSizes output_sizes(const Model &model, const RunRequest &request);

// check_input_size (model/geometry.h) with the message worded for any
// caller: "input size 28x28 is not valid for this model: ...".
void check_run_size(const ModelConfig &config, int height, int width);

} // namespace pola::api
