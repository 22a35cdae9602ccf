#include "py_features.h"

#include <string>
#include <vector>

#include <pybind11/numpy.h>

#include "errors.h"

namespace py = pybind11;

namespace polaformer_py {

const char *kFeaturesDoc = R"doc(features(x, stages=None, pooled=True) -> dict

Backbone features of a preprocessed (N, C, H, W) batch at any H x W the
model accepts (multiples of 32 for the released models; others raise
polaformer.InputError naming the nearest valid sizes). Returns
{"stage1": (N, C1, H/4, W/4), ..., "pooled": (N, C)} float32 arrays:
stage i is the tokens after its last block as an NCHW map (no extra norm),
"pooled" the embedding the head would read. stages: an iterable of stage
numbers (1-based; None = all). Only what is asked for is computed.)doc";

namespace {

// The 1-based stage numbers asked for, checked against the model.
std::vector<int> stage_numbers(const py::object &stages, int count) {
  std::vector<int> out;
  if (stages.is_none()) {
    for (int i = 1; i <= count; ++i) out.push_back(i);
    return out;
  }
  for (const py::handle s : stages) {
    if (py::isinstance<py::bool_>(s) || !py::hasattr(s, "__index__"))
      throw_input_error("Model.features: stages must be stage numbers (ints in 1.." + std::to_string(count) + ")");
    const long long i = py::module_::import("operator").attr("index")(s).cast<long long>();
    if (i < 1 || i > count)
      throw_input_error("Model.features: stage " + std::to_string(i) + " is not in 1.." + std::to_string(count));
    for (int j : out)
      if (j == i) throw_input_error("Model.features: stage " + std::to_string(i) + " is listed twice");
    out.push_back(static_cast<int>(i));
  }
  return out;
}

} // namespace

py::dict model_features(PyModel &model, const py::object &x, const py::object &stages, bool pooled) {
  pola_model *m = model.handle();
  const int channels = std::get<0>(model.input_shape().cast<std::tuple<int, int, int>>());
  py::object np = py::module_::import("numpy");
  if (x.is_none()) throw_input_error("Model.features: x is None; expected a float32 array (N, C, H, W)");
  py::array a = np.attr("asarray")(x);
  const char kind = a.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u')
    throw_input_error("Model.features: x has dtype " + dtype_name(a.dtype()) + ", not real numbers");
  if (a.ndim() != 4 || a.shape(1) != channels || a.shape(0) < 1 || a.shape(0) > 4096)
    throw_input_error("Model.features: x must have shape (N, " + std::to_string(channels) +
                      ", H, W) with N in 1..4096 (preprocessed images, NCHW)");
  const py::array_t<float, py::array::c_style> in = np.attr("require")(a, np.attr("float32"), py::make_tuple("C", "A"));
  const int n = static_cast<int>(in.shape(0)), h = static_cast<int>(in.shape(2)), w = static_cast<int>(in.shape(3));
  if (pola_model_check_size(m, h, w) != POLA_OK) throw_input_error(std::string("Model.features: ") + pola_last_error());
  const std::vector<int> wanted = stage_numbers(stages, pola_model_num_stages(m));
  if (wanted.empty() && !pooled) throw_input_error("Model.features: no stage and no pooled embedding asked for");

  py::dict out;
  pola_run_options options = pola_run_options_default();
  options.batch = n;
  options.height = h;
  options.width = w;
  options.outputs = pooled ? POLA_OUTPUT_POOLED : 0u;
  pola_run_output output = pola_run_output_default();
  for (int i : wanted) {
    int c = 0, fh = 0, fw = 0;
    if (pola_model_feature_shape(m, h, w, i - 1, &c, &fh, &fw) != POLA_OK)
      throw_input_error(std::string("Model.features: ") + pola_last_error());
    py::array_t<float> f({n, c, fh, fw});
    options.stage_mask |= 1u << (i - 1);
    output.stages[i - 1] = f.mutable_data();
    out[py::str("stage" + std::to_string(i))] = f;
  }
  py::array_t<float> pooled_array;
  if (pooled) {
    pooled_array = py::array_t<float>({n, pola_model_pooled_size(m)});
    out["pooled"] = pooled_array;
  }
  output.pooled = pooled ? pooled_array.mutable_data() : nullptr;
  const float *inputs[1] = {in.data()};
  pola_status status;
  {
    py::gil_scoped_release nogil;
    status = pola_run(m, &options, inputs, &output);
  }
  if (status == POLA_ERROR_INPUT) throw polaformer::InputError(std::string("Model.features: ") + pola_last_error());
  if (status != POLA_OK) throw polaformer::InternalError(std::string("Model.features: ") + pola_last_error());
  return out;
}

} // namespace polaformer_py
