/*
 * polaformer.h: the C API of the PolaFormer CPU inference engine.
 *
 * Load a model file (`.pola`, made by `pola convert`) once, then classify
 * NCHW float batches or image files from any number of threads:
 *
 *     pola_options opt = pola_default_options();
 *     pola_model *m = NULL;
 *     if (pola_model_load("model.pola", &opt, &m) != POLA_OK) {
 *       fprintf(stderr, "%s\n", pola_last_error());
 *       return 1;
 *     }
 *     float *logits = malloc(sizeof(float) * pola_model_num_classes(m));
 *     pola_model_run_images(m, &path, 1, logits);
 *     ...
 *     pola_model_free(m);
 *
 * Conventions
 *  - Every function that can fail returns a pola_status: POLA_OK (0),
 *    POLA_ERROR_INPUT (1: a bad file, argument or array; the caller can fix
 *    it) or POLA_ERROR_INTERNAL (2: a bug or resource exhaustion). No C++
 *    exception ever crosses this interface.
 *  - After a failure, pola_last_error() describes it, naming the file when a
 *    file is at fault. The message is per thread and stays valid until the
 *    next failing call on the same thread; successful calls leave it alone.
 *  - A loaded model may be used by several threads at once (each run borrows
 *    its own scratch memory); pola_model_free must not race with other calls
 *    on the same model.
 *  - Plain C99; the library itself is C++17 and needs no C++ in the caller.
 */
#ifndef POLAFORMER_H
#define POLAFORMER_H

#include <stddef.h>

/* POLA_API marks the functions the shared library exports; everything else
 * in it is hidden. Define POLA_STATIC when linking the static library on
 * Windows (on ELF platforms it makes no difference). */
#if defined(POLA_STATIC)
#define POLA_API
#elif defined(_WIN32)
#if defined(POLA_BUILDING_LIBRARY)
#define POLA_API __declspec(dllexport)
#else
#define POLA_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define POLA_API __attribute__((visibility("default")))
#else
#define POLA_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pola_status {
  POLA_OK = 0,
  POLA_ERROR_INPUT = 1,    /* bad file, argument or data: pola_last_error() says which */
  POLA_ERROR_INTERNAL = 2  /* a bug or out of memory */
} pola_status;

/* An opaque loaded model. */
typedef struct pola_model pola_model;

/* Load-time options. Always start from pola_default_options() so fields
 * added later get their defaults. */
typedef struct pola_options {
  int threads; /* worker threads per run; 0 (default) = all available cores */
} pola_options;

POLA_API pola_options pola_default_options(void);

/* The library version, "MAJOR.MINOR.PATCH". */
POLA_API const char *pola_version(void);

/* Why the last failing call on this thread failed ("" if none has). */
POLA_API const char *pola_last_error(void);

/* Maps and validates the model file at `path` (options may be NULL for the
 * defaults). On success *out owns the model; on failure *out is NULL. */
POLA_API pola_status pola_model_load(const char *path, const pola_options *options, pola_model **out);

/* Releases a model; NULL is allowed. */
POLA_API void pola_model_free(pola_model *model);

/* The input of one image: channels x height x width floats (NCHW planes). */
POLA_API pola_status pola_model_input_shape(const pola_model *model, int *channels, int *height, int *width);

/* Number of classes (logits per image); 0 if model is NULL. */
POLA_API int pola_model_num_classes(const pola_model *model);

/* Name of class `index` (0-based); NULL if out of range. The string lives as
 * long as the model. Models without names report "class_<index>". */
POLA_API const char *pola_model_class_name(const pola_model *model, int index);

/* Runs `batch` preprocessed images: input holds batch * channels * height *
 * width floats (NCHW), logits receives batch * num_classes floats. */
POLA_API pola_status pola_model_run(pola_model *model, const float *input, int batch, float *logits);

/* Decodes and preprocesses one image file exactly as the model's metadata
 * prescribes (resize, center crop, normalize); writes channels * height *
 * width floats to `out`. */
POLA_API pola_status pola_model_preprocess_image(const pola_model *model, const char *image_path, float *out);

/* Classifies `count` image files as one batch: logits receives count *
 * num_classes floats, in the order of `image_paths`. */
POLA_API pola_status pola_model_run_images(pola_model *model, const char *const *image_paths, int count,
                                           float *logits);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POLAFORMER_H */
