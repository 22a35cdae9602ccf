// Loading, freeing and describing a model through the C API.
#include <limits>

#include "guarded_call.h"
#include "model_handle.h"
#include "model_image_spec.h"

using pola::api::guarded_call;
using pola::api::require;

extern "C" {

POLA_API pola_status pola_model_load(const char *path, const pola_options *options, pola_model **out) {
  if (out) *out = nullptr;
  return guarded_call("pola_model_load", [&] {
    require(out != nullptr, "out must not be NULL");
    require(path != nullptr, "path must not be NULL");
    const pola_options opt = options ? *options : pola_default_options();
    require(opt.threads >= 0, "options.threads must be >= 0 (0 = all cores)");
    require(opt.precision == POLA_PRECISION_FP32 || opt.precision == POLA_PRECISION_BF16 ||
                opt.precision == POLA_PRECISION_AUTO || opt.precision == POLA_PRECISION_INT8,
            "options.precision must be POLA_PRECISION_FP32, _BF16, _INT8 or _AUTO");
    auto handle = std::make_unique<pola_model>();
    handle->path = path;
    pola::ModelOptions mo;
    mo.threads = opt.threads;
    mo.allow_nonfinite = opt.allow_nonfinite != 0;
    mo.precision = opt.precision == POLA_PRECISION_BF16   ? pola::PrecisionRequest::bf16
                   : opt.precision == POLA_PRECISION_INT8 ? pola::PrecisionRequest::int8
                   : opt.precision == POLA_PRECISION_AUTO ? pola::PrecisionRequest::automatic
                                                          : pola::PrecisionRequest::fp32;
    handle->model = pola::Model::load(path, mo);
    handle->class_names = handle->model->class_names();
    try {
      handle->image_spec = pola::api::model_image_spec(*handle->model, path);
    } catch (const pola::InputError &e) {
      handle->image_spec_error = e.what();
    }
    *out = handle.release();
  });
}

POLA_API void pola_model_free(pola_model *model) { delete model; }

POLA_API pola_status pola_model_input_shape(const pola_model *model, int *channels, int *height, int *width) {
  return guarded_call("pola_model_input_shape", [&] {
    require(model != nullptr, "model must not be NULL");
    const auto &cfg = model->model->config();
    if (channels) *channels = cfg.in_chans;
    if (height) *height = cfg.img_size;
    if (width) *width = cfg.img_size;
  });
}

POLA_API const char *pola_model_precision(const pola_model *model) {
  return model ? pola::precision_name(model->model->precision().precision) : nullptr;
}

POLA_API int pola_model_threads(const pola_model *model) { return model ? model->model->threads() : 0; }

POLA_API int pola_model_num_classes(const pola_model *model) {
  return model ? model->model->config().num_classes : 0;
}

POLA_API const char *pola_model_class_name(const pola_model *model, int index) {
  if (!model || index < 0 || static_cast<size_t>(index) >= model->class_names.size()) return nullptr;
  return model->class_names[static_cast<size_t>(index)].c_str();
}

} // extern "C"
