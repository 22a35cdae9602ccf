// Fuzz target: a model file (weights/FORMAT.md) as `pola info` and `pola run`
// read it. The header reader, the metadata and config parsers, the tensor
// checklist, the engine's config parser and model builders (pola::Model::load)
// and, for models small enough, one forward pass over the file's weights.
// Refusal is InputError; anything else escaping (bad_alloc, logic_error,
// dnnl::error) or any sanitizer report is a bug.
#include <cstdint>
#include <vector>

#include "engine/model.h"
#include "tests/fuzz/fuzz_temp_file.h"
#include "weights/error.h"
#include "weights/model_file.h"
#include "weights/model_metadata.h"

namespace {

// What `pola info` does with the file.
void inspect(const std::string &path) {
  using namespace pola::weights;
  try {
    const ModelFile f = ModelFile::open(path);
    const pola::ModelConfig cfg = read_model_config(f);
    check_model_tensors(f, cfg);
    read_class_names(f, cfg);
    read_preprocess(f);
  } catch (const pola::InputError &) {
  }
}

// What `pola run` does: load (config + every tensor checked, plan built) and run.
void load_and_run(const std::string &path) {
  std::unique_ptr<pola::Model> model;
  try {
    pola::ModelOptions options;
    options.threads = 1;
    model = pola::Model::load(path, options);
  } catch (const pola::InputError &) {
    return;
  }
  // Only tiny inputs: the point is the weights and shapes, not speed.
  if (model->input_size() > (1 << 16) || model->config().num_classes > (1 << 16)) return;
  std::vector<float> input(static_cast<size_t>(model->input_size()), 0.5f);
  std::vector<float> logits(static_cast<size_t>(model->config().num_classes));
  try {
    model->run(input.data(), 1, logits.data());
  } catch (const pola::InputError &) {
    // Finite but extreme weights can overflow to non-finite logits, which
    // run() refuses: a clean refusal, not a finding.
  }
  model->class_names();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static pola::fuzz::TempFile file(".pola");
  file.write(data, size);
  inspect(file.path());
  load_and_run(file.path());
  return 0;
}
