#include "py_model.h"

#include <algorithm>
#include <exception>
#include <limits>

#include "errors.h"
#include "image_sources.h"
#include "prediction.h"
#include "run_probe.h"

namespace py = pybind11;

namespace polaformer_py {

namespace {

std::string path_argument(const py::object &path) {
  if (path.is_none()) throw_input_error("Model: path is None; expected the path of a .pola model file");
  if (!py::isinstance<py::str>(path) && !py::hasattr(path, "__fspath__"))
    throw_input_error("Model: path must be a str or os.PathLike, got " +
                      py::str(py::type::of(path).attr("__name__")).cast<std::string>());
  py::object p = py::module_::import("os").attr("fspath")(path);
  if (!py::isinstance<py::str>(p)) p = p.attr("decode")("utf-8", "surrogateescape");
  return p.cast<std::string>();
}

// None or 0: all cores, as the CLI's --threads 0 and pola_options.threads.
int threads_argument(const py::object &threads) {
  if (threads.is_none()) return 0;
  // Integers of any kind (numpy's too, through __index__), not bools or floats.
  if (py::isinstance<py::bool_>(threads) || !py::hasattr(threads, "__index__"))
    throw_input_error("Model: threads must be an int >= 0 (0 or None: all cores)");
  const py::int_ index = py::module_::import("operator").attr("index")(threads);
  if (index > py::int_(4096) || index < py::int_(0))
    throw_input_error("Model: threads must be in 0..4096 (0 or None: all cores), got " + py::str(static_cast<py::handle>(index)).cast<std::string>());
  const long long n = index.cast<long long>();
  return static_cast<int>(n);
}

// None or 'fp32' | 'bf16' | 'int8' | 'auto', as the CLI's --precision; a CPU
// without native bf16 (int8) refuses 'bf16' ('int8') when the model loads (the
// engine's message), and so does a float file 'int8'.
pola_precision precision_argument(const py::object &precision) {
  if (precision.is_none()) return POLA_PRECISION_FP32;
  if (!py::isinstance<py::str>(precision))
    throw_input_error("Model: precision must be None or one of 'fp32', 'bf16', 'int8', 'auto'");
  const std::string p = precision.cast<std::string>();
  if (p == "fp32") return POLA_PRECISION_FP32;
  if (p == "bf16") return POLA_PRECISION_BF16;
  if (p == "int8") return POLA_PRECISION_INT8;
  if (p == "auto") return POLA_PRECISION_AUTO;
  throw_input_error("Model: unknown precision '" + p + "'; use 'fp32', 'bf16', 'int8' or 'auto'");
}

pola_options load_options(int threads, pola_precision precision, bool allow_nonfinite) {
  pola_options o = pola_default_options();
  o.threads = threads;
  o.precision = precision;
  o.allow_nonfinite = allow_nonfinite ? 1 : 0;
  return o;
}

// Counts the run in and out of the probe even when the engine throws.
class ProbeScope {
 public:
  ProbeScope() { run_probe().enter(); }
  ~ProbeScope() { run_probe().leave(); }
  ProbeScope(const ProbeScope &) = delete;
  ProbeScope &operator=(const ProbeScope &) = delete;
};

polaformer::Model load(const std::string &path, const pola_options &options) {
  py::gil_scoped_release nogil;
  return polaformer::Model(path, options);
}

} // namespace

PyModel::LoadArgs PyModel::load_args(const py::object &path, const py::object &threads, const py::object &precision,
                                     bool allow_nonfinite) {
  LoadArgs a;
  a.path = path_argument(path);
  a.options = load_options(threads_argument(threads), precision_argument(precision), allow_nonfinite); // before anything is loaded
  return a;
}

PyModel::PyModel(const py::object &path, const py::object &threads, const py::object &precision, bool allow_nonfinite)
    : PyModel(load_args(path, threads, precision, allow_nonfinite)) {}

PyModel::PyModel(const LoadArgs &a) : model_(load(a.path, a.options)), path_(a.path), threads_(model_.threads()) {
  const auto s = model_.input_shape();
  shape_ = ImageShape{s.channels, s.height, s.width};
  classes_ = model_.class_names();
}

int64_t PyModel::images_per_call(int height, int width) const {
  const int64_t own = static_cast<int64_t>(shape_.height) * shape_.width;
  const int64_t asked = static_cast<int64_t>(height) * width;
  return std::clamp<int64_t>(kMaxRunImages * own / std::max<int64_t>(1, asked), 1, kMaxRunImages);
}

void PyModel::run_released(const char *caller, const float *input, int64_t count, int height, int width, float *logits,
                           int64_t first_image) {
  const int64_t per_image = static_cast<int64_t>(shape_.channels) * height * width;
  const int64_t classes = static_cast<int64_t>(classes_.size());
  const int64_t per_call = images_per_call(height, width);
  for (int64_t begin = 0; begin < count; begin += per_call) {
    const int n = static_cast<int>(std::min(per_call, count - begin));
    ProbeScope probe;
    pola_run_options options = pola_run_options_default();
    options.batch = n;
    options.height = height;
    options.width = width;
    pola_run_output output = pola_run_output_default();
    output.logits = logits + begin * classes;
    const float *inputs[1] = {input + begin * per_image};
    const pola_status status = pola_run(model_.get(), &options, inputs, &output);
    if (status == POLA_OK) continue;
    // The engine numbers images within its call; say which images of the caller's batch those are.
    const int64_t first = first_image + begin;
    const std::string where = first == 0 ? "" : "images " + std::to_string(first) + ".." + std::to_string(first + n - 1) +
                                                    " (the engine counts from the first of them): ";
    const std::string message = std::string(caller) + ": " + where + pola_last_error();
    if (status == POLA_ERROR_INPUT) throw polaformer::InputError(message);
    throw polaformer::InternalError(message);
  }
}

void PyModel::check_memory(const char *caller, int64_t count, int height, int width) {
  pola_run_options options = pola_run_options_default();
  options.batch = static_cast<int>(count);
  options.height = height;
  options.width = width;
  const pola_status status = pola_run_check_memory(model_.get(), &options);
  if (status == POLA_OK) return;
  const std::string message = std::string(caller) + ": " + pola_last_error();
  if (status == POLA_ERROR_INPUT) throw polaformer::InputError(message);
  throw polaformer::InternalError(message);
}

py::dict PyModel::memory_need(int batch, const py::object &height, const py::object &width) {
  if (height.is_none() != width.is_none()) throw_input_error("Model.memory_need: give both height and width, or neither");
  const int h = height.is_none() ? shape_.height : height.cast<int>();
  const int w = width.is_none() ? shape_.width : width.cast<int>();
  pola_run_options options = pola_run_options_default();
  options.batch = batch;
  options.height = h;
  options.width = w;
  pola_memory_need need{};
  const pola_status status = pola_run_memory_need(model_.get(), &options, &need);
  if (status == POLA_ERROR_INPUT) throw polaformer::InputError(std::string("Model.memory_need: ") + pola_last_error());
  if (status != POLA_OK) throw polaformer::InternalError(std::string("Model.memory_need: ") + pola_last_error());
  py::dict d;
  d["working"] = need.working;
  d["inputs"] = need.inputs;
  d["outputs"] = need.outputs;
  d["total"] = need.total;
  d["available"] = need.available;
  return d;
}

py::array_t<float> PyModel::run(const py::object &x) {
  const py::array batch = checked_batch(x, shape_);
  const int64_t count = batch.shape(0);
  // Any size the model accepts: the library judges it (and names the nearest valid sizes).
  const py::ssize_t h = batch.shape(2), w = batch.shape(3);
  if (h > std::numeric_limits<int>::max() || w > std::numeric_limits<int>::max())
    throw_input_error("Model.run: x has images of " + std::to_string(h) + "x" + std::to_string(w) +
                      " pixels, more than the engine takes");
  const int height = static_cast<int>(h), width = static_cast<int>(w);
  if (pola_model_check_size(model_.get(), height, width) != POLA_OK)
    throw_input_error(std::string("Model.run: ") + pola_last_error());
  const int64_t classes = static_cast<int64_t>(classes_.size());
  const int64_t max_count = std::max<int64_t>(1, kMaxLogitsPerCall / std::max<int64_t>(1, classes));
  if (count > max_count) // e.g. a broadcast view: never allocate (or run) that many
    throw_input_error("Model.run: x holds " + std::to_string(count) + " images; at most " + std::to_string(max_count) +
                      " per call (their logits would exceed 1 GiB); split the batch");
  py::array_t<float> logits({static_cast<py::ssize_t>(count), static_cast<py::ssize_t>(classes)});
  if (count == 0) return logits;
  float *out = logits.mutable_data();
  if (usable_without_copy(batch)) { // the caller's memory, read in place
    const float *in = static_cast<const float *>(batch.data());
    py::gil_scoped_release nogil;
    run_released("Model.run", in, count, height, width, out, 0);
    return logits;
  }
  // Converted a slice at a time, so a broadcast or strided view of a huge
  // batch never turns into one huge copy; the first slice's memory is
  // checked before it is copied (the engine checks the caller's own array).
  const int64_t per_call = images_per_call(height, width);
  check_memory("Model.run", std::min(per_call, count), height, width);
  for (int64_t begin = 0; begin < count; begin += per_call) {
    const int64_t n = std::min(per_call, count - begin);
    const auto part = float32_slice(batch, begin, n);
    const float *in = part.data();
    py::gil_scoped_release nogil;
    run_released("Model.run", in, n, height, width, out + begin * classes, begin);
  }
  return logits;
}

py::array_t<float> PyModel::preprocess(const py::object &image) {
  const ImageSource src = collect_one_image(image, "Model.preprocess");
  py::array_t<float> x({shape_.channels, shape_.height, shape_.width});
  float *out = x.mutable_data();
  py::gil_scoped_release nogil;
  preprocess_into(model_.get(), src, out);
  return x;
}

std::vector<size_t> PyModel::preprocess_batch(const std::vector<ImageSource> &sources, size_t begin, size_t n,
                                              float *x, std::vector<std::pair<size_t, std::string>> &failures) const {
  const size_t per_image = static_cast<size_t>(shape_.channels) * shape_.height * shape_.width;
  std::vector<pola_image> images(n);
  for (size_t j = 0; j < n; ++j) images[j] = as_pola_image(sources[begin + j]);
  std::vector<size_t> written;
  // The library writes every image it can read and names the lowest that fails:
  // keep those before it and go on after it until the rest is read.
  for (size_t from = 0; from < n;) {
    int failed = -1;
    const pola_status status = pola_model_preprocess_batch(model_.get(), images.data() + from, static_cast<int>(n - from),
                                                           x + from * per_image, &failed);
    if (status != POLA_OK && (status != POLA_ERROR_INPUT || failed < 0)) { // not one image's fault
      const std::string message = std::string("Model.classify: ") + pola_last_error();
      if (status == POLA_ERROR_INPUT) throw polaformer::InputError(message);
      throw polaformer::InternalError(message);
    }
    const size_t good = status == POLA_OK ? n - from : static_cast<size_t>(failed);
    for (size_t j = from; j < from + good; ++j) written.push_back(begin + j);
    if (status == POLA_OK) break;
    failures.emplace_back(begin + from + good, pola_last_error());
    from += good + 1;
  }
  return written;
}

py::list PyModel::classify(const py::object &images, int top, int batch) {
  if (top < 1) throw_input_error("Model.classify: top must be >= 1, got " + std::to_string(top));
  if (batch < 1 || batch > kMaxRunImages)
    throw_input_error("Model.classify: batch must be in 1.." + std::to_string(kMaxRunImages) + ", got " +
                      std::to_string(batch));
  // Arguments that are not images at all (None, numbers, float arrays) are the caller's bug: refused here, before anything runs.
  const std::vector<ImageSource> sources = collect_images(images, "Model.classify");
  const size_t per_image = static_cast<size_t>(shape_.channels) * shape_.height * shape_.width;
  const int classes = static_cast<int>(classes_.size());
  // Per image, (class index, probability) best first; empty for an image that could not be read.
  std::vector<std::vector<std::pair<int, double>>> ranked(sources.size());
  std::vector<std::pair<size_t, std::string>> failures; // (image, the library's message), in image order
  if (!sources.empty()) // before the first batch is allocated and decoded
    check_memory("Model.classify", std::min(sources.size(), static_cast<size_t>(batch)), shape_.height, shape_.width);
  {
    py::gil_scoped_release nogil; // only C++ objects in here
    std::vector<float> x, logits;
    for (size_t begin = 0; begin < sources.size(); begin += static_cast<size_t>(batch)) {
      const size_t n = std::min(static_cast<size_t>(batch), sources.size() - begin);
      x.resize(n * per_image);
      // As `pola classify`: an image that cannot be read is set aside and the rest of its batch runs together.
      const std::vector<size_t> ok = preprocess_batch(sources, begin, n, x.data(), failures);
      for (size_t j = 0; j < ok.size(); ++j)
        if (ok[j] - begin != j)
          std::copy_n(x.data() + (ok[j] - begin) * per_image, per_image, x.data() + j * per_image);
      if (ok.empty()) continue;
      logits.resize(ok.size() * static_cast<size_t>(classes));
      run_released("Model.classify", x.data(), static_cast<int64_t>(ok.size()), shape_.height, shape_.width,
                   logits.data(), static_cast<int64_t>(ok.front()));
      // pola_top_k: the probabilities `pola classify` prints, the same doubles
      for (size_t j = 0; j < ok.size(); ++j) ranked[ok[j]] = polaformer::top_k(logits.data() + j * classes, classes, top);
    }
  }
  std::vector<bool> failed(sources.size(), false);
  for (const auto &f : failures) failed[f.first] = true;
  py::list results;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (failed[i]) {
      results.append(py::none());
      continue;
    }
    py::list row;
    for (const auto &[index, prob] : ranked[i]) row.append(make_prediction(classes_[static_cast<size_t>(index)], prob, index));
    results.append(row);
  }
  if (failures.empty()) return results;
  // The CLI's exit code 1 after it printed the others: the call fails, naming every bad image
  // (the first few in the message), with what was classified still at hand.
  constexpr size_t kNamed = 10;
  std::string message = "Model.classify: " + std::to_string(failures.size()) + " of " + std::to_string(sources.size()) +
                        " images could not be classified (the others' results are in .results):";
  const std::string caller = "Model.classify: ";
  py::list failure_list;
  for (size_t k = 0; k < failures.size(); ++k) {
    const auto &[i, why] = failures[k];
    failure_list.append(py::make_tuple(i, why));
    if (k < kNamed) message += "\n  " + sources[i].label.substr(caller.size()) + ": " + why;
  }
  if (failures.size() > kNamed) message += "\n  ... and " + std::to_string(failures.size() - kNamed) + " more (.failures lists them all)";
  py::dict attributes;
  attributes["results"] = results;
  attributes["failures"] = failure_list;
  raise_input_error(message, attributes);
}

py::tuple PyModel::input_shape() const { return py::make_tuple(shape_.channels, shape_.height, shape_.width); }

py::object PyModel::info() const { return py::module_::import("json").attr("loads")(model_.info_json()); }

std::string PyModel::repr() const {
  return "<polaformer.Model '" + path_ + "': " + std::to_string(classes_.size()) + " classes, input " + shape_.text() +
         ", threads " + std::to_string(threads_) + ">";
}

} // namespace polaformer_py
