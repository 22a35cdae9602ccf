// The extension module polaformer._core; the package polaformer re-exports it
// (python/polaformer/__init__.py). Docstrings here are what help() shows.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <polaformer/polaformer.h>

#include "classify/class_ranking.h"
#include "convert_binding.h"
#include "errors.h"
#include "py_features.h"
#include "prediction.h"
#include "py_model.h"
#include "run_probe.h"

namespace py = pybind11;
using polaformer_py::PyModel;

namespace {

const char *kModelDoc = R"doc(A loaded PolaFormer model file (.pola, made by `pola convert`).

Model(path, threads=None, precision=None, allow_nonfinite=False)

  path       the model file (str or os.PathLike)
  threads    engine threads per run: None or 0 = all cores (as the CLI's
             --threads 0); with several models or processes on one
             machine, give each a share of the cores; .threads says how
             many threads that is
  precision  None or 'fp32' (exact), 'bf16' (linear layers and patch
             embeddings in bf16 with fp32 accumulation; needs AMX-BF16 or
             AVX512-BF16, else InputError naming what is missing) or 'auto'
             (bf16 where it measures faster: AMX-BF16, or AVX512-BF16 dot
             products at >= 1.5x the FMA rate; `pola --version` says which);
             .precision says which ran
  allow_nonfinite
             False: inputs holding NaN/Inf, and runs whose logits are not
             finite, raise polaformer.InputError; True: they pass through

One Model may be used from several Python threads at once: inference
releases the GIL, and each run has its own scratch memory. Errors are
polaformer.InputError (a ValueError: bad file, argument or array, the
message names it) or polaformer.InternalError (a RuntimeError).

Example:
    m = polaformer.Model("models/fashion_pola_pvt.pola")
    m.classify(["models/samples/0000_ankle-boot.png"], top=3)
    # [[('Ankle boot', 0.99...), ('Sneaker', ...), ('Sandal', ...)]]
    logits = m.run(m.preprocess("models/samples/0000_ankle-boot.png")[None])
)doc";

const char *kRunDoc = R"doc(run(x) -> numpy.ndarray

Logits of a batch of preprocessed images, float32 of shape (N, classes).

x is an (N, C, H, W) array with (C, H, W) == input_shape, or with C the
model's channels and any H x W the model accepts (multiples of 32 for the
released models, as `pola run`; another size raises polaformer.InputError
naming the nearest valid ones). N = 0 gives an empty result. A
C-contiguous float32 array is read in place, without a copy; other
layouts (strided, broadcast, Fortran order) and other real dtypes
(float64, float16, integers) are converted a slice of images at a time.
Anything else (None, 0-d or wrong-rank arrays, wrong channels,
bool/complex/object/string dtypes) raises polaformer.InputError, a
ValueError, before anything runs, and so does a batch whose logits would
exceed 1 GiB. Large batches run in engine calls of 256 images (fewer for
images larger than input_shape); an image's logits depend on that image
only (another batch size may move them by float rounding, ~1e-6).)doc";

const char *kClassifyDoc = R"doc(classify(images, top=5, batch=32) -> list[list[polaformer.Prediction]]

The `top` most probable classes of each image, best first, as
(class name, softmax probability) pairs; one list per image, in order.
Each pair is a polaformer.Prediction, a tuple of those two with the
class's index in Model.classes as .index. The probabilities are the
doubles `pola classify --json` prints for the same image (one softmax,
in double, in the library: pola_top_k).

images is one image or a sequence of them; an image is a path (str or
os.PathLike) to an image file, encoded image bytes (PNG, JPEG, GIF, BMP,
PNM; bytes, bytearray or memoryview), or a decoded uint8 array of
H x W (grey) or H x W x C pixels (C = 1, 2, 3 or 4: grey, grey+alpha, RGB,
RGBA), converted as PIL's convert('RGB'/'L') does. A 4-d N x H x W x C
uint8 array is N images. Each image is resized, cropped and normalized
as the model file prescribes (Model.info['preprocess']). `batch` images
run together.

An image that cannot be read (a missing file, not an image, empty bytes)
does not stop the others, as in `pola classify`: every other image is
classified, then polaformer.InputError is raised naming each bad one
(images[i]: the problem), with
  e.results   the list classify would have returned, None for each bad image
  e.failures  [(i, message)] for each bad image, in order
Anything that is not an image at all (None, a number, a float array)
raises InputError at once, before anything runs.)doc";

const char *kPreprocessDoc = R"doc(preprocess(image) -> numpy.ndarray

One image (a path, encoded bytes or an HWC uint8 array, as for classify)
decoded and preprocessed exactly as the model file prescribes: float32 of
shape input_shape (C, H, W). m.run(m.preprocess(img)[None]) gives the
logits classify ranks.)doc";

const char *kMemoryNeedDoc = R"doc(memory_need(batch=1, height=None, width=None) -> dict

What a run of `batch` images of height x width (None: input_shape's)
allocates, in bytes, computed without allocating anything: "working" (the
engine's plan: activations, size-dependent tables, per-thread buffers),
"inputs", "outputs" (the logits), "total", and "available", what the
engine finds available now: the least of MemAvailable, the cgroup's memory
limit less its usage, the process's RLIMIT_AS/RLIMIT_DATA room, and the
environment variable POLA_MEMORY_LIMIT_BYTES. A run, classify or features
call whose memory does not fit raises polaformer.InputError naming the
need and what is available, before anything is allocated.)doc";

const char *kConvertDoc = R"doc(convert(checkpoint, output, labels=None, arch=None, mean=None, std=None,
        resize=None, crop=None, interpolation=None, dtype=None, weights=None) -> None

Converts a PolaFormer checkpoint (a torch.save .pth zip or a .safetensors
file; or an existing .pola model file, to re-write its metadata) into the
model file `output`, as `pola convert` does.

  labels         the class names, in class order: a sequence of str, or a
                 text file of them, one per line (the same checks either way)
  arch           the preset the checkpoint must be (e.g. 'pola_pvt_tiny');
                 None detects it
  mean, std      normalization per input channel (a number or a sequence)
  resize, crop   the square resize and the center crop (= the input size)
  interpolation  the resize filter ('bicubic')
  dtype          how the weights of the linear layers and dense convolutions
                 are stored: None or 'f32' (float32), 'bf16' (about half
                 the file), as `pola convert --dtype`
  weights        of a training checkpoint holding both: None or 'raw' (its
                 'model' entry), 'ema' (its 'state_dict_ema'; refused for a
                 file without one), as `pola convert --weights`

Arguments left None keep the input model file's values (or the defaults
for a checkpoint). Everything is checked before anything is written; the
output appears whole or not at all, and never replaces an input. Errors
raise polaformer.InputError naming the file and the problem.)doc";

} // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "The PolaFormer CPU inference engine (the C++ extension behind the polaformer package).";
  polaformer_py::register_errors(m);
  polaformer_py::register_prediction(m);
  m.attr("__version__") = pola_version();

  py::class_<PyModel>(m, "Model", kModelDoc)
      .def(py::init<const py::object &, const py::object &, const py::object &, bool>(), py::arg("path"),
           py::arg("threads") = py::none(), py::arg("precision") = py::none(), py::arg("allow_nonfinite") = false)
      .def("run", &PyModel::run, py::arg("x"), kRunDoc)
      .def("classify", &PyModel::classify, py::arg("images"), py::arg("top") = 5, py::arg("batch") = 32, kClassifyDoc)
      .def("preprocess", &PyModel::preprocess, py::arg("image"), kPreprocessDoc)
      .def("memory_need", &PyModel::memory_need, py::arg("batch") = 1, py::arg("height") = py::none(),
           py::arg("width") = py::none(), kMemoryNeedDoc)
      .def("features", &polaformer_py::model_features, py::arg("x"), py::arg("stages") = py::none(),
           py::arg("pooled") = true, polaformer_py::kFeaturesDoc)
      .def_property_readonly("info", &PyModel::info,
                             "The model's self-description (what `pola info --json` prints) as a dict: family, "
                             "config, classes, preprocess, parameters, ...")
      .def_property_readonly("classes", &PyModel::classes, "Class names, in logit order.")
      .def_property_readonly("num_classes", [](const PyModel &self) { return self.classes().size(); },
                             "Number of classes (logits per image).")
      .def_property_readonly("input_shape", &PyModel::input_shape, "(C, H, W) of one preprocessed image.")
      .def_property_readonly("path", &PyModel::path, "The model file this was loaded from.")
      .def_property_readonly("threads", &PyModel::threads, "Engine threads per run: the number given, or the cores this process may use for None or 0.")
      .def_property_readonly("precision", &PyModel::precision,
                             "The arithmetic precision the model runs at: 'fp32' or 'bf16' ('auto' resolved).")
      .def("__repr__", &PyModel::repr);

  m.def("convert", &polaformer_py::convert, py::arg("checkpoint"), py::arg("output"), py::arg("labels") = py::none(),
        py::arg("arch") = py::none(), py::arg("mean") = py::none(), py::arg("std") = py::none(),
        py::arg("resize") = py::none(), py::arg("crop") = py::none(), py::arg("interpolation") = py::none(),
        py::arg("dtype") = py::none(), py::arg("weights") = py::none(), kConvertDoc);

  // For polaformer.dask's output: the JSON line `pola classify --json` prints for an image (the
  // same code, apps/classify/class_ranking.h), so both print the same text, probabilities included.
  m.def(
      "_classification_json",
      [](const std::string &file, const std::vector<std::tuple<std::string, int, double>> &top,
         const std::optional<std::string> &error) {
        std::vector<pola::app::RankedClass> best;
        std::vector<std::string> names;
        for (const auto &[name, index, prob] : top) {
          if (index < 0) throw py::value_error("a class index must be >= 0");
          if (static_cast<size_t>(index) >= names.size()) names.resize(static_cast<size_t>(index) + 1);
          names[static_cast<size_t>(index)] = name;
          best.push_back({index, prob});
        }
        nlohmann::json line = pola::app::classification_json(file, best, names);
        if (error) line["error"] = *error;
        return line.dump();
      },
      py::arg("file"), py::arg("top"), py::arg("error") = py::none(),
      "Internal: the JSON line of one image, top = [(class, index, probability)], as `pola classify --json`.");
  m.def(
      "_json_number", [](double value) { return nlohmann::json(value).dump(); }, py::arg("value"),
      "Internal: a probability written as `pola classify --json` writes it.");

  // For the GIL test only (tests/python/test_threads.py): see run_probe.h.
  m.def(
      "_testing_arm_run_barrier",
      [](int parties, double timeout_seconds) { polaformer_py::run_probe().arm(parties, timeout_seconds); },
      py::arg("parties"), py::arg("timeout_seconds"),
      "Testing only: the next `parties` engine runs wait until all are in progress at once (at most "
      "timeout_seconds). Resets the statistics.");
  m.def(
      "_testing_run_stats",
      [] {
        const auto s = polaformer_py::run_probe().stats();
        py::dict d;
        d["max_active"] = s.max_active;
        d["barrier_passed"] = s.barrier_passed;
        d["barrier_timeouts"] = s.barrier_timeouts;
        return d;
      },
      "Testing only: the most engine runs seen in progress at once, and the barriers passed / timed out.");
}
