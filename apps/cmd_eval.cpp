// `pola eval`: top-1 / top-5 accuracy of a model on a labelled image set.
//
//   pola eval --model M.pola --data DIR [--split t10k] [--labels FILE] [--limit N]
//             [--class-order A,B,... | --class-order FOLDER=CLASS,... | --class-order-file FILE]
//             [--threads N] [--batch B] [--json] [--predictions OUT.csv]
//
// DIR is an IDX pair (MNIST / Fashion-MNIST), a labels file's root, or an
// ImageFolder tree: apps/eval/dataset.h has the rules. Every image, including
// IDX pixels, goes through the model's own `preprocess` metadata with the
// engine's PIL-matching pipeline (engine/preprocess), so an IDX image scores
// exactly like a PNG of the same pixels.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "weights/file_access.h"
#include "cli_checks.h"
#include "command.h"
#include "precision_option.h"
#include "engine/api/model_image_spec.h"
#include "engine/model.h"
#include "engine/preprocess/preprocess.h"
#include "engine/preprocess/preprocess_batch.h"
#include "eval/class_folders.h"
#include "eval/dataset.h"
#include "eval/eval_report.h"
#include "eval/metrics.h"
#include "eval/progress_bar.h"
#include "weights/error.h"

namespace {

using Clock = std::chrono::steady_clock;

struct EvalArgs {
  std::string model, data, split = "t10k", labels, predictions, class_order, class_order_file;
  int64_t limit = 0;
  int threads = 0, batch = 64;
  pola::PrecisionRequest precision = pola::PrecisionRequest::fp32;
  size_t confused = 5;
  bool json = false;
};

void eval_command(const EvalArgs &a) {
  pola::ModelOptions options;
  options.threads = a.threads;
  options.precision = a.precision;
  auto model = pola::Model::load(a.model, options);
  const auto spec = pola::api::model_image_spec(*model, a.model); // shared with `pola classify`
  const auto class_names = model->class_names();
  const int classes = model->config().num_classes;

  pola::eval::DatasetOptions data_options{a.data, a.split, a.labels, {}};
  if (!a.class_order.empty()) data_options.class_order = pola::eval::split_class_order(a.class_order);
  if (!a.class_order_file.empty()) data_options.class_order = pola::eval::read_class_order_file(a.class_order_file);
  auto data = pola::eval::open_dataset(data_options, class_names);
  const size_t n = a.limit > 0 ? std::min<size_t>(data->size(), size_t(a.limit)) : data->size();

  // Collected in memory and written at the end by the one output rule.
  std::ostringstream predictions;
  if (!a.predictions.empty()) {
    pola::weights::check_output_is_not_input(a.predictions, {a.model, a.labels, a.class_order_file});
    predictions << "index,item,label,top1\n";
  }

  pola::eval::EvalRun run;
  run.model_path = a.model;
  run.arch = model->config().arch;
  run.data_description = data->description() + (n < data->size() ? ", first " + std::to_string(n) : "");
  run.class_names = class_names;
  run.threads = model->threads();
  run.batch = a.batch;
  run.confused_pairs = a.confused;

  pola::eval::Metrics metrics(classes);
  pola::eval::ProgressBar bar{int64_t(n)};
  const size_t per_image = size_t(spec.channels) * spec.crop * spec.crop;
  std::vector<float> input(per_image * a.batch), logits(size_t(classes) * a.batch);
  const auto start = Clock::now();
  for (size_t first = 0; first < n; first += a.batch) {
    const int count = int(std::min<size_t>(a.batch, n - first));
    // The engine's parallel decode (also behind pola_model_preprocess_batch, the Python binding's).
    pola::preprocess::preprocess_batch(
        count, [&](int b) { return data->load(first + size_t(b), spec.channels); }, spec, run.threads, input.data());
    const auto t0 = Clock::now();
    model->run(input.data(), count, logits.data());
    run.seconds_model += std::chrono::duration<double>(Clock::now() - t0).count();
    for (int b = 0; b < count; ++b) {
      const int label = data->label(first + b);
      const int top1 = metrics.add(logits.data() + size_t(b) * classes, label);
      if (!a.predictions.empty())
        predictions << first + b << ",\"" << data->item_name(first + b) << "\"," << label << "," << top1 << "\n";
    }
    bar.update(int64_t(first + count), metrics.top1_percent());
  }
  run.seconds_total = std::chrono::duration<double>(Clock::now() - start).count();
  bar.finish();
  if (!a.predictions.empty()) {
    const std::string csv = predictions.str();
    pola::weights::write_output_file(a.predictions, [&](pola::weights::OutputSink &out) { out.write(csv.data(), csv.size()); });
  }
  const std::string report = a.json ? pola::eval::json_report(run, metrics) : pola::eval::text_report(run, metrics);
  std::fputs(report.c_str(), stdout);
}

pola::app::RegisterCommand register_eval([](CLI::App &root) {
  auto a = std::make_shared<EvalArgs>();
  auto *c = root.add_subcommand("eval", "Top-1 / top-5 accuracy on a labelled image set (IDX pair, ImageFolder "
                                        "tree or labels file), with throughput and the most confused classes");
  c->add_option("--model,-m", a->model, "Model file (.pola)")->required();
  c->add_option("--data,-d", a->data,
                "Directory: an IDX pair <split>-images-idx3-ubyte[.gz] + <split>-labels-idx1-ubyte[.gz], "
                "or one sub-folder per class (named after the model's classes, ignoring case and '-', '_', ' ', for "
                "all or some of them; otherwise sorted folder order = class index), or the root of --labels paths")
      ->required();
  c->add_option("--split", a->split, "IDX split name, the file-name prefix (default t10k; e.g. train)");
  auto *labels = c->add_option("--labels", a->labels,
                "Labels file: one 'PATH<TAB>LABEL' per line, PATH relative to --data, LABEL a class index or name "
                "(matched as folder names are)");
  auto *order = c->add_option("--class-order", a->class_order,
                              "ImageFolder: every class's folder in class-index order, comma-separated (A,B,C: A is "
                              "class 0), or FOLDER=CLASS pairs for some classes (CLASS a name or index); folders not "
                              "listed are skipped");
  auto *order_file = c->add_option("--class-order-file", a->class_order_file,
                                   "ImageFolder: --class-order's entries, one per line (line i = class i, or "
                                   "FOLDER=CLASS)");
  order->excludes(order_file)->excludes(labels);
  order_file->excludes(labels);
  c->add_option("--limit,-n", a->limit, "Evaluate only the first N images (0 = all)")
      ->check(pola::app::whole_number_at_least(0));
  c->add_option("--threads,-t", a->threads, "Worker threads (0 = all cores)")
      ->check(pola::app::whole_number_in(0, 1024));
  pola::app::add_precision_option(*c, a->precision);
  c->add_option("--batch,-b", a->batch, "Images per model run (default 64)")
      ->check(pola::app::whole_number_in(1, 4096));
  c->add_option("--predictions", a->predictions, "Also write index,item,label,top1 per image to this CSV file");
  c->add_option("--confused", a->confused, "How many most-confused class pairs to list (default 5)")
      ->check(pola::app::whole_number_in(0, 1000000));
  c->add_flag("--json", a->json, "Print the results as one JSON object");
  c->callback([a] { eval_command(*a); });
});

} // namespace
