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

/* Arithmetic of the linear layers and patch embeddings (issue 19). */
typedef enum pola_precision {
  POLA_PRECISION_FP32 = 0, /* default: exact parity with the fp32 reference */
  POLA_PRECISION_BF16 = 1, /* bf16 products, fp32 accumulation; needs AMX-BF16 or AVX512-BF16,
                              else pola_model_load fails with POLA_ERROR_INPUT naming what is missing */
  POLA_PRECISION_AUTO = 2  /* bf16 where it measures faster than fp32 (AMX-BF16, or AVX512-BF16 dot
                              products at >= 1.5x the FMA rate), else fp32 */
} pola_precision;

/* Load-time options. Always start from pola_default_options() so fields
 * added later get their defaults. */
typedef struct pola_options {
  int threads; /* worker threads per run; 0 (default) = all available cores (OMP_NUM_THREADS when set) */
  /* 0 (default): an input holding NaN or Inf is refused (POLA_ERROR_INPUT),
   * and so is a run whose logits are not all finite. 1: both pass through. */
  int allow_nonfinite;
  /* A pola_precision; POLA_PRECISION_FP32 by default. Norms, softmax, GELU,
   * the polarity attention and residual sums stay fp32 in every precision. */
  int precision;
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

/* The precision the model runs at ("fp32" or "bf16": POLA_PRECISION_AUTO
 * resolved), or NULL for a NULL model. */
POLA_API const char *pola_model_precision(const pola_model *model);

/* Worker threads per run: options.threads, or for 0 the number it resolved
 * to (all cores this process may run on); 0 for a NULL model. */
POLA_API int pola_model_threads(const pola_model *model);

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

/* The k most probable classes of one row of `classes` logits, best first
 * (ties: the lower index first): the softmax exp(l - max) / sum computed in
 * double, the probabilities `pola classify`, `pola serve`, Python's
 * Model.classify and the Dask example all report. Writes min(k, classes)
 * entries to index and probability (either may be NULL). */
POLA_API pola_status pola_top_k(const float *logits, int classes, int k, int *index, double *probability);

/* ---- Images from memory and the model's self-description ---------------
 * (for servers and language bindings, which hold bytes and arrays, not files) */

/* As pola_model_preprocess_image, from an encoded image (PNG, JPEG, GIF, BMP,
 * PNM, ...) of `size` bytes in memory. */
POLA_API pola_status pola_model_preprocess_image_bytes(const pola_model *model, const void *data, size_t size,
                                                       float *out);

/* As pola_model_preprocess_image, from decoded 8-bit pixels: `height` rows of
 * `width` pixels of `channels` interleaved bytes (HWC, as numpy/PIL hold
 * them): 1 = grey, 2 = grey + alpha, 3 = RGB, 4 = RGBA. Converted as PIL's
 * convert('RGB'/'L') does (alpha dropped, grey replicated), then resized,
 * cropped and normalized as a file would be. */
POLA_API pola_status pola_model_preprocess_pixels(const pola_model *model, const unsigned char *pixels, int height,
                                                  int width, int channels, float *out);

/* One image of pola_model_preprocess_batch: a file (`path`), else an encoded
 * image of `size` bytes at `data`, else decoded pixels as
 * pola_model_preprocess_pixels takes them. Zero-initialize it and set one. */
typedef struct pola_image {
  const char *path;
  const void *data;
  size_t size;
  const unsigned char *pixels;
  int height, width, channels;
} pola_image;

/* Decodes and preprocesses `count` images into `out` (count * channels *
 * height * width floats, in order) on the model's threads, as `pola eval`
 * does (the same code). Every image is attempted, and each one that can be
 * read is written to its place even when others fail; the lowest-numbered
 * failing image's error is reported, and its number written to `*failed`
 * (if not NULL; -1 when all succeed or the failure is no image's). */
POLA_API pola_status pola_model_preprocess_batch(const pola_model *model, const pola_image *images, int count,
                                                 float *out, int *failed);

/* The model's description as one JSON object (what `pola info --json`
 * prints: family, config, classes, preprocess, parameters, ...). The string
 * lives as long as the model; NULL (with pola_last_error) on failure. */
POLA_API const char *pola_model_info_json(const pola_model *model);

/* ---- Converting checkpoints (what `pola convert` does) -------------------
 * For bindings and tools that convert without the `pola` program. */

/* What pola_convert may change in the written model's metadata. Start from
 * pola_default_convert_options(): every field then means "keep" (the input
 * model file's value) or "default" (for a checkpoint). */
typedef struct pola_convert_options {
  const char *arch;          /* NULL or "": detect; else the preset the checkpoint must be (pola_pvt_tiny, ...) */
  const char *labels_file;   /* NULL: keep; else class names, one per line, in class-index order */
  const double *mean;        /* NULL: keep; else num_mean values, one per input channel */
  int num_mean;
  const double *std;         /* NULL: keep; else num_std values (> 0), one per input channel */
  int num_std;
  int resize;                /* 0: keep; else the square size images are resized to */
  int crop;                  /* 0: keep; else the center crop (= the model's input size) */
  const char *interpolation; /* NULL: keep; else the resize filter (the engine implements "bicubic") */
  /* NULL or "f32" (as `pola convert`): float32 weights; "bf16": the weights of the linear layers and
   * patch embeddings stored as bf16 (`pola convert --dtype bf16`) */
  const char *dtype;
  /* NULL: see labels_file; else num_class_names class names, in class-index order, checked as the
   * lines of a labels file are (messages name them labels[i]); not both with labels_file */
  const char *const *class_names;
  int num_class_names;
} pola_convert_options;

POLA_API pola_convert_options pola_default_convert_options(void);

/* Converts `checkpoint` (a torch.save zip, a safetensors file, or a model
 * file to re-write) into the model file `output` (options may be NULL).
 * Everything is read and checked before anything is written, and the output
 * appears whole or not at all; an output naming one of the inputs is refused. */
POLA_API pola_status pola_convert(const char *checkpoint, const char *output, const pola_convert_options *options);

/* ---- One engine call for several callers' images (issue 22: servers) ------
 * A server batching concurrent requests holds each request's images in its
 * own array and wants each request's logits back in its own array. */

/* Runs `parts` arrays of images as one batch: part i holds counts[i] >= 1
 * preprocessed images at inputs[i] (counts[i] * channels * height * width
 * floats, NCHW) and receives counts[i] * num_classes logits at logits[i]
 * (which must not overlap any input). The images are run in part order, so
 * the result is that of one pola_model_run over the parts concatenated; the
 * total count must be 1..4096. On failure no logits array is written. */
POLA_API pola_status pola_model_run_parts(pola_model *model, int parts, const float *const *inputs,
                                          const int *counts, float *const *logits);

/* ---- The attention core alone, for long 1-D sequences --------------------
 *
 * Polarity-aware linear attention (SPEC.md section 3) on token-major
 * (tokens, heads * head_dim) arrays with no image structure: per head h
 * (channels [h*head_dim, (h+1)*head_dim)) and with d = head_dim,
 *     k' = (k + key_bias) * inv_scale,   q' = q * inv_scale,
 *     phi(x) = [relu(x)^power, relu(-x)^power]         (2d per token)
 *     KV = sum_t phi(k'_t)^T v_t / n_k,  kmean = sum_t phi(k'_t) / n_k
 *     q_sim = phi(q'),  q_opp = q_sim with its two halves swapped
 *     out[:, :d/2] = (q_sim @ KV)[:, :d/2] / (q_sim . kmean + 1e-6)
 *     out[:, d/2:] = (q_opp @ KV)[:, d/2:] / (q_opp . kmean + 1e-6)
 * in O(n_q + n_k) time; no n_q x n_k matrix ever exists. Extra memory does
 * not grow with the sequence: about 33 * heads * (2 * d * d) floats.
 * The result is the same for every thread count (sums run in a fixed order).
 *
 * For sequences much larger than the caches, allocate q, k, v and out with
 * pola_alloc_floats: 2 MB aligned and advised as huge pages, which made the
 * core ~5-9% faster here than ordinary 4 KB pages. */
typedef struct pola_attention_args {
  long long n_q, n_k;          /* query and key tokens (n_q >= 0, n_k >= 0) */
  int heads, head_dim;         /* heads >= 1, 1 <= head_dim <= 1024 */
  const float *q, *k, *v;      /* (n_q | n_k) rows of heads * head_dim floats */
  long long ld_q, ld_k, ld_v;  /* row strides in floats; 0 = heads * head_dim */
  const float *key_bias;       /* NULL, or (n_k, heads * head_dim) dense, added to k */
  const float *inv_scale;      /* heads * head_dim: multiplies q and k + key_bias */
  const float *power;          /* heads * head_dim: the feature-map exponents, > 0 */
  float *out;                  /* n_q rows; must not overlap q, k, v or key_bias */
  long long ld_out;            /* 0 = heads * head_dim */
  int threads;                 /* 0 = all available cores */
} pola_attention_args;

/* All zero / NULL: set every pointer and size before calling pola_attention. */
POLA_API pola_attention_args pola_default_attention_args(void);

/* Computes `out` as above. A NULL or inconsistent argument gives
 * POLA_ERROR_INPUT and a message naming it; out is then untouched. */
POLA_API pola_status pola_attention(const pola_attention_args *args);

/* An uninitialised array of `count` floats, 2 MB aligned and advised as huge
 * pages (see above); NULL if count is 0 or the memory is not available
 * (pola_last_error() says which). Release with pola_free_floats. */
POLA_API float *pola_alloc_floats(size_t count);

/* Releases an array from pola_alloc_floats; NULL is allowed. */
POLA_API void pola_free_floats(float *p);

/* ---- Any input size and backbone features (dense prediction) -------------
 *
 * A model runs at its own img_size (pola_model_input_shape) or at any
 * height x width it accepts: each side a multiple of the model's
 * downsampling (32 for the released models). Features are what a detection
 * or segmentation neck consumes: stage i's tokens after its last block as an
 * NCHW map (strides 4, 8, 16, 32; no extra norm), and the pooled embedding
 * the head would read. Only what is asked for is computed.
 *
 *     int c, h, w;
 *     pola_model_feature_shape(m, 512, 768, 3, &c, &h, &w);   // stage 4: 512 x 16 x 24
 *     float *stages[4] = {NULL, NULL, NULL, malloc(sizeof(float) * c * h * w)};
 *     pola_model_features(m, image, 1, 512, 768, stages, NULL);
 *
 * The model keeps one compiled plan per (batch, height, width, outputs) and
 * a few idle ones (least recently used first out), so alternating between
 * two sizes does not rebuild. */

/* POLA_OK if height x width can be run; else POLA_ERROR_INPUT with a message
 * naming the nearest valid sizes. */
POLA_API pola_status pola_model_check_size(const pola_model *model, int height, int width);

/* Number of stages (4 for the released models); 0 if model is NULL. */
POLA_API int pola_model_num_stages(const pola_model *model);

/* The feature map of stage `stage` (0-based) for one image of height x
 * width: channels x feature_height x feature_width floats. */
POLA_API pola_status pola_model_feature_shape(const pola_model *model, int height, int width, int stage,
                                              int *channels, int *feature_height, int *feature_width);

/* Floats of the pooled embedding per image (the head's input); 0 if NULL. */
POLA_API int pola_model_pooled_size(const pola_model *model);

/* pola_model_run for input (batch, channels, height, width). */
POLA_API pola_status pola_model_run_sized(pola_model *model, const float *input, int batch, int height, int width,
                                          float *logits);

/* Runs the backbone on input (batch, channels, height, width). stage_out
 * holds pola_model_num_stages() pointers: NULL for a stage not wanted, else
 * room for batch x its feature shape (NCHW). pooled is NULL or room for
 * batch x pola_model_pooled_size() floats. At least one output must be
 * asked for; stages after the last one needed are not computed (all of them
 * are when pooled is asked for), the head never is. */
POLA_API pola_status pola_model_features(pola_model *model, const float *input, int batch, int height, int width,
                                         float *const *stage_out, float *pooled);

/* ---- Memory: what a run needs, checked before anything is allocated --------
 *
 * A run whose memory does not fit in what is available fails with
 * POLA_ERROR_INPUT and a message naming both ("a batch of 64 images of
 * 4096x4096 needs 37.2 GiB (the plan's working memory 35.1 GiB plus inputs
 * and outputs 2.1 GiB); 21.9 GiB is available (MemAvailable in
 * /proc/meminfo)") before the engine allocates any of it. Available is the
 * least of MemAvailable, the cgroup's memory limit less its usage, RLIMIT_AS
 * less the process's size, RLIMIT_DATA less its data, and the environment
 * variable POLA_MEMORY_LIMIT_BYTES (a number of bytes), read at each check.
 * Every run that builds a plan checks (its inputs and outputs already
 * allocated by then); pola_model_run_images checks before it decodes.
 * Servers and bindings call pola_model_check_memory before allocating a
 * request's images. Memory that still runs out (another process took it
 * after the check) is POLA_ERROR_INTERNAL with a message saying so. */

/* What a run of `batch` images of height x width allocates, in bytes. */
typedef struct pola_memory_need {
  size_t working;   /* the plan's: activation arena, size-dependent tables, per-thread buffers */
  size_t inputs;    /* batch * channels * height * width floats */
  size_t outputs;   /* batch * num_classes floats (logits) */
  size_t total;     /* working + inputs + outputs */
  size_t available; /* what a check finds available now; SIZE_MAX when nothing could be read */
} pola_memory_need;

/* Fills *out for a logits run, allocating nothing (the plan's graph is laid
 * out, not built). POLA_ERROR_INPUT for a batch < 1 or a size the model
 * does not accept. */
POLA_API pola_status pola_model_memory_need(pola_model *model, int batch, int height, int width,
                                            pola_memory_need *out);

/* POLA_OK if a logits run of `batch` images of height x width fits in the
 * memory available, counting its inputs and outputs as still to be
 * allocated (a plan already built for the shape counts as allocated; idle
 * plans are freed before refusing); else POLA_ERROR_INPUT with the message
 * a run would give. */
POLA_API pola_status pola_model_check_memory(pola_model *model, int batch, int height, int width);

/* How the model's plan pool has served runs so far: a run that found an idle
 * plan for its shape is a hit, one that had to build a plan a miss; an
 * eviction freed the least recently used idle plan; idle plans now held. */
typedef struct pola_plan_cache_stats {
  long long hits, misses, evictions, idle;
} pola_plan_cache_stats;

POLA_API pola_status pola_model_plan_cache_stats(pola_model *model, pola_plan_cache_stats *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POLAFORMER_H */
