// Formatting `pola eval` results; see eval_report.h.
#include "eval_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace pola::eval {
namespace {

std::string format(const char *fmt, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

double per_second(double n, double seconds) { return seconds > 0 ? n / seconds : 0.0; }

} // namespace

std::string text_report(const EvalRun &run, const Metrics &m) {
  std::string s;
  s += "model   " + run.model_path + " (" + run.arch + ")\n";
  s += "data    " + run.data_description + "\n";
  s += "images  " + std::to_string(m.images()) + "\n";
  s += "top-1   " + format("%.2f%%", m.top1_percent()) + " (" + std::to_string(m.correct_top1()) + ")\n";
  s += "top-" + std::to_string(m.top_k()) + "   " + format("%.2f%%", m.topk_percent()) + " (" +
       std::to_string(m.correct_topk()) + ")\n";
  s += "speed   " + format("%.1f img/s overall (%.1f s), %.1f img/s in the model", per_second(m.images(), run.seconds_total),
                           run.seconds_total, per_second(m.images(), run.seconds_model)) +
       " [" + std::to_string(run.threads) + (run.threads == 1 ? " thread" : " threads") + ", batch " + std::to_string(run.batch) + "]\n";
  s += "per-class top-1:\n";
  for (size_t c = 0; c < run.class_names.size(); ++c)
    if (m.images_of_class(int(c)) > 0)
      s += format("  %6.2f%%", m.class_top1_percent(int(c))) + "  " + run.class_names[c] + " (" +
           std::to_string(m.images_of_class(int(c))) + ")\n";
  const auto pairs = m.most_confused(run.confused_pairs);
  s += pairs.empty() ? "no confusions\n" : "most confused (true -> predicted: images):\n";
  for (const auto &p : pairs)
    s += "  " + run.class_names[p.truth] + " -> " + run.class_names[p.predicted] + ": " + std::to_string(p.count) + "\n";
  return s;
}

std::string json_report(const EvalRun &run, const Metrics &m) {
  nlohmann::json j;
  j["model"] = run.model_path;
  j["arch"] = run.arch;
  j["data"] = run.data_description;
  j["images"] = m.images();
  // Fractions in [0, 1], as every JSON output of the tool (classify's "prob" too).
  j["top1_accuracy"] = m.top1_percent() / 100.0;
  j["correct_top1"] = m.correct_top1();
  j["top_k"] = m.top_k();
  j["topk_accuracy"] = m.topk_percent() / 100.0;
  j["correct_topk"] = m.correct_topk();
  j["seconds"] = run.seconds_total;
  j["seconds_model"] = run.seconds_model;
  j["images_per_second"] = per_second(m.images(), run.seconds_total);
  j["threads"] = run.threads;
  j["batch"] = run.batch;
  nlohmann::json classes = nlohmann::json::array();
  // A class without images (a subset evaluated) has no accuracy: null, not 0.
  for (size_t c = 0; c < run.class_names.size(); ++c) {
    const int64_t images = m.images_of_class(int(c));
    const nlohmann::json accuracy = images ? nlohmann::json(m.class_top1_percent(int(c)) / 100.0) : nlohmann::json();
    classes.push_back(
        {{"index", c}, {"name", run.class_names[c]}, {"images", images}, {"top1_accuracy", accuracy}});
  }
  j["per_class"] = classes;
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto &p : m.most_confused(run.confused_pairs))
    pairs.push_back({{"true", run.class_names[p.truth]}, {"predicted", run.class_names[p.predicted]},
                     {"true_index", p.truth}, {"predicted_index", p.predicted}, {"count", p.count}});
  j["most_confused"] = pairs;
  return j.dump(1) + "\n";
}

} // namespace pola::eval
