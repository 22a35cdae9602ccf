// What `pola eval` prints: a human summary or one JSON object.
#pragma once

#include <string>
#include <vector>

#include "metrics.h"

namespace pola::eval {

struct EvalRun {
  std::string model_path, arch, data_description;
  std::vector<std::string> class_names;
  int threads = 0, batch = 0;
  double seconds_total = 0;     // decoding + preprocessing + model
  double seconds_model = 0;     // inside Model::run only
  size_t confused_pairs = 5;
};

std::string text_report(const EvalRun &run, const Metrics &m);
std::string json_report(const EvalRun &run, const Metrics &m);

} // namespace pola::eval
