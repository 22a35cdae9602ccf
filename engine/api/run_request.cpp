#include "run_request.h"

#include <cstring>
#include <string>

#include "model/geometry.h"
#include "weights/error.h"

namespace pola::api {

namespace {

[[noreturn]] void bad(const std::string &what) { throw InputError(what); }

// The caller's struct copied over our defaults: a caller built with an older
// (shorter) struct gets the defaults for the fields it lacks; one built with
// a newer (longer) struct is accepted only while the fields this library does
// not know are zero, because it could not honour them.
template <class T> T read_grown(const T *given, T defaults, const char *name) {
  const size_t size = given->struct_size;
  if (size < sizeof(size_t) + sizeof(int))
    bad(std::string(name) + ".struct_size is " + std::to_string(size) + "; start from the " + name +
        " default, which sets it");
  std::memcpy(&defaults, given, size < sizeof(T) ? size : sizeof(T));
  const auto *tail = reinterpret_cast<const unsigned char *>(given);
  for (size_t i = sizeof(T); i < size; ++i)
    if (tail[i] != 0)
      bad(std::string(name) + " sets fields this library (ABI " + std::to_string(POLA_ABI_VERSION) +
          ") does not know; it was built for a newer polaformer.h");
  defaults.struct_size = sizeof(T);
  return defaults;
}

void read_counts(const pola_run_options &o, RunRequest &r) {
  if (!o.part_counts) {
    if (o.parts != 1) bad("options.parts is " + std::to_string(o.parts) + " but options.part_counts is NULL");
    if (o.batch < 1 || o.batch > kMaxRunImages)
      bad("batch must be in 1.." + std::to_string(kMaxRunImages) + ", got " + std::to_string(o.batch));
    r.counts = {o.batch};
    r.total = o.batch;
    return;
  }
  if (o.parts < 1) bad("options.parts must be at least 1, got " + std::to_string(o.parts));
  long long total = 0;
  for (int i = 0; i < o.parts; ++i) {
    const int c = o.part_counts[i];
    if (c < 1)
      bad("options.part_counts[" + std::to_string(i) + "] is " + std::to_string(c) +
          "; every part holds at least one image");
    total += c;
    if (total > kMaxRunImages) bad("the parts hold more than " + std::to_string(kMaxRunImages) + " images");
    r.counts.push_back(c);
  }
  if (o.batch != 0 && o.batch != total)
    bad("options.batch is " + std::to_string(o.batch) + " but options.part_counts add up to " +
        std::to_string(total) + " (leave batch 0 with part_counts)");
  r.total = static_cast<int>(total);
}

} // namespace

PlanKey RunRequest::plan_key() const {
  PlanKey key;
  key.batch = total;
  key.height = height;
  key.width = width;
  key.logits = logits;
  key.pooled = pooled;
  key.stages = stage_mask;
  return key;
}

void check_run_size(const ModelConfig &config, int height, int width) {
  // check_input_size puts its context before the message; the C API's
  // messages name no caller (each door names its own), so the context it
  // passes is taken off again, exactly as given.
  static const std::string kContext = "run";
  try {
    check_input_size(config, height, width, kContext);
  } catch (const InputError &e) {
    const std::string message = e.what();
    if (message.compare(0, kContext.size() + 2, kContext + ": ") != 0) throw;
    throw InputError(message.substr(kContext.size() + 2));
  }
}

RunRequest read_run_options(const Model &model, const pola_run_options *options) {
  const pola_run_options o =
      options ? read_grown(options, pola_run_options_default(), "pola_run_options") : pola_run_options_default();
  RunRequest r;
  read_counts(o, r);
  const ModelConfig &cfg = model.config();
  if ((o.height == 0) != (o.width == 0))
    bad("options.height and options.width are " + std::to_string(o.height) + " and " + std::to_string(o.width) +
        "; give both, or 0 for both (the model's own size)");
  r.height = o.height ? o.height : static_cast<int>(cfg.img_size);
  r.width = o.width ? o.width : static_cast<int>(cfg.img_size);
  check_run_size(cfg, r.height, r.width);
  const unsigned known = POLA_OUTPUT_LOGITS | POLA_OUTPUT_POOLED;
  if (o.outputs & ~known) bad("options.outputs holds unknown flags " + std::to_string(o.outputs & ~known));
  r.logits = (o.outputs & POLA_OUTPUT_LOGITS) != 0;
  r.pooled = (o.outputs & POLA_OUTPUT_POOLED) != 0;
  const size_t stages = cfg.num_stages();
  if (stages > POLA_MAX_STAGES) bad("the model has more stages than POLA_MAX_STAGES");
  if (o.stage_mask >> stages)
    bad("options.stage_mask asks for stage bits beyond the model's " + std::to_string(stages) + " stages (0.." +
        std::to_string(stages - 1) + ")");
  r.stage_mask = o.stage_mask;
  if (!r.logits && !r.pooled && r.stage_mask == 0)
    bad("options ask for no output: set POLA_OUTPUT_LOGITS or POLA_OUTPUT_POOLED in options.outputs, or stage bits "
        "in options.stage_mask");
  return r;
}

pola_run_output read_run_output(const pola_run_output *outputs, int part, const RunRequest &request) {
  const size_t stride = outputs[0].struct_size;
  const auto *given =
      reinterpret_cast<const pola_run_output *>(reinterpret_cast<const unsigned char *>(outputs) + part * stride);
  if (given->struct_size != stride)
    bad("outputs[" + std::to_string(part) + "].struct_size differs from outputs[0]'s");
  const pola_run_output out = read_grown(given, pola_run_output_default(), "pola_run_output");
  const std::string name = "outputs[" + std::to_string(part) + "].";
  if (request.logits && !out.logits) bad(name + "logits must not be NULL (POLA_OUTPUT_LOGITS is asked for)");
  if (request.pooled && !out.pooled) bad(name + "pooled must not be NULL (POLA_OUTPUT_POOLED is asked for)");
  for (int i = 0; i < POLA_MAX_STAGES; ++i)
    if ((request.stage_mask >> i & 1u) && !out.stages[i])
      bad(name + "stages[" + std::to_string(i) + "] must not be NULL (options.stage_mask asks for it)");
  return out;
}

OutputSizes output_sizes(const Model &model, const RunRequest &request) {
  OutputSizes s;
  if (request.logits) s.logits = static_cast<size_t>(model.config().num_classes);
  if (request.pooled) s.pooled = static_cast<size_t>(model.pooled_size());
  const auto shapes = model.feature_shapes(request.height, request.width);
  s.stages.assign(shapes.size(), 0);
  for (size_t i = 0; i < shapes.size(); ++i)
    if (request.stage_mask >> i & 1u)
      s.stages[i] = static_cast<size_t>(shapes[i].channels * shapes[i].height * shapes[i].width);
  return s;
}

} // namespace pola::api
