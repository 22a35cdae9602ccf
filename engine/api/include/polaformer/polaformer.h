/*
 * polaformer.h: the C API of the PolaFormer CPU inference engine.
 *
 * Load a model file (`.pola`, made by `pola convert`) once, then classify
 * NCHW float batches or image files from any number of threads:
 *
 *     pola_model *m = NULL;
 *     if (pola_model_load("model.pola", NULL, &m) != POLA_OK) {
 *       fprintf(stderr, "%s\n", pola_last_error());
 *       return 1;
 *     }
 *     pola_image image = {0};
 *     image.path = "cat.jpg";
 *     float *x = ...;        // channels * height * width floats (pola_model_input_shape)
 *     float *logits = ...;   // pola_model_num_classes floats
 *     pola_model_preprocess_batch(m, &image, 1, x, NULL);
 *     pola_run_options run = pola_run_options_default();    // 1 image, logits, own size
 *     pola_run_output out = pola_run_output_default();
 *     out.logits = logits;
 *     const float *inputs[1] = {x};
 *     pola_run(m, &run, inputs, &out);
 *     ...
 *     pola_model_free(m);
 *
 * Conventions
 *  - Every function that can fail returns a pola_status: POLA_OK (0),
 *    POLA_ERROR_INPUT (1: a bad file, argument or array; the caller can fix
 *    it) or POLA_ERROR_INTERNAL (2: a bug or resource exhaustion). No C++
 *    exception ever crosses this interface.
 *  - After a failure, pola_last_error() describes it, naming the file when a
 *    file is at fault, and pola_last_error_function() names the function
 *    that failed. Messages describe the problem only, so a binding or server
 *    can pass them on to users who never called a C function. Both are per
 *    thread and stay valid until the next failing call on the same thread;
 *    successful calls leave them alone.
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

/* POLA_DEPRECATED marks the names kept for one release after the API was
 * consolidated around pola_run; they are removed in the next release (the
 * "Deprecated" section at the end names each one's replacement). Define
 * POLA_NO_DEPRECATION_WARNINGS to silence the warnings while migrating. */
#if defined(POLA_NO_DEPRECATION_WARNINGS) || defined(POLA_BUILDING_LIBRARY)
#define POLA_DEPRECATED(replacement)
#elif defined(__GNUC__) || defined(__clang__)
#define POLA_DEPRECATED(replacement) __attribute__((deprecated("deprecated, removed in the next release; use " replacement)))
#elif defined(_MSC_VER)
#define POLA_DEPRECATED(replacement) __declspec(deprecated("deprecated, removed in the next release; use " replacement))
#else
#define POLA_DEPRECATED(replacement)
#endif

/* The ABI this header describes. It changes whenever a function is removed
 * or changes meaning, or a struct changes in a way struct_size cannot absorb;
 * a program can compare it with pola_abi_version() at start-up to catch a
 * header and a library from different releases. Adding functions, or fields
 * at the end of a struct that carries struct_size, keeps it. */
#define POLA_ABI_VERSION 2 /* 2: pola_convert_options gained `weights` (it carries no struct_size) */

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

/* ---- The library ---------------------------------------------------- */

/* The library version, "MAJOR.MINOR.PATCH". */
POLA_API const char *pola_version(void);

/* The ABI the library implements: POLA_ABI_VERSION of the header it was
 * built with. */
POLA_API int pola_abi_version(void);

/* Why the last failing call on this thread failed ("" if none has). */
POLA_API const char *pola_last_error(void);

/* The public function whose failure set pola_last_error() ("pola_run", ...;
 * "" if none has failed). A deprecated function reports the call it is
 * implemented on. */
POLA_API const char *pola_last_error_function(void);

/* ---- Loading -------------------------------------------------------- */

/* Arithmetic of the linear layers and patch embeddings: bf16 halves the
 * weight traffic where the CPU multiplies bf16 natively. */
typedef enum pola_precision {
  POLA_PRECISION_FP32 = 0, /* default: exact parity with the fp32 reference */
  POLA_PRECISION_BF16 = 1, /* bf16 products, fp32 accumulation; needs AMX-BF16 or AVX512-BF16,
                              else pola_model_load fails with POLA_ERROR_INPUT naming what is missing */
  POLA_PRECISION_AUTO = 2, /* int8 for a quantized file (`pola quantize`) on a CPU with AMX-INT8 or
                              VNNI; else bf16 where it measures faster than fp32 (AMX-BF16, or
                              AVX512-BF16 dot products at >= 1.5x the FMA rate); else fp32 */
  POLA_PRECISION_INT8 = 3  /* int8 linear layers (the file's, made by `pola quantize`), fp32 elsewhere;
                              needs AMX-INT8 or AVX512-VNNI/AVX-VNNI and a quantized file, else
                              pola_model_load fails with POLA_ERROR_INPUT saying which */
} pola_precision;

/* Load-time options. Always start from pola_default_options() so fields
 * added later get their defaults. Threads and precision are fixed per model
 * (the plans and packed weights are built for them), not per run. */
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

/* Maps and validates the model file at `path` (options may be NULL for the
 * defaults). On success *out owns the model; on failure *out is NULL. */
POLA_API pola_status pola_model_load(const char *path, const pola_options *options, pola_model **out);

/* Releases a model; NULL is allowed. */
POLA_API void pola_model_free(pola_model *model);

/* ---- What a model is ---------------------------------------------------
 * Queries that allocate nothing and never run the network. */

/* The input of one image at the model's own size: channels x height x width
 * floats (NCHW planes). */
POLA_API pola_status pola_model_input_shape(const pola_model *model, int *channels, int *height, int *width);

/* Number of classes (logits per image); 0 if model is NULL. */
POLA_API int pola_model_num_classes(const pola_model *model);

/* Name of class `index` (0-based); NULL if out of range. The string lives as
 * long as the model. Models without names report "class_<index>". */
POLA_API const char *pola_model_class_name(const pola_model *model, int index);

/* The precision the model runs at ("fp32", "bf16" or "int8": POLA_PRECISION_AUTO
 * resolved), or NULL for a NULL model. */
POLA_API const char *pola_model_precision(const pola_model *model);

/* Worker threads per run: options.threads, or for 0 the number it resolved
 * to (all cores this process may run on); 0 for a NULL model. */
POLA_API int pola_model_threads(const pola_model *model);

/* Number of stages (4 for the released models, at most POLA_MAX_STAGES); 0
 * if model is NULL. */
POLA_API int pola_model_num_stages(const pola_model *model);

/* Floats of the pooled embedding per image (the head's input); 0 if NULL. */
POLA_API int pola_model_pooled_size(const pola_model *model);

/* POLA_OK if height x width can be run; else POLA_ERROR_INPUT with a message
 * naming the nearest valid sizes. A model runs at its own size or at any
 * size whose sides are multiples of its downsampling (32 for the released
 * models). */
POLA_API pola_status pola_model_check_size(const pola_model *model, int height, int width);

/* The feature map of stage `stage` (0-based) for one image of height x
 * width: channels x feature_height x feature_width floats (strides 4, 8, 16,
 * 32 for the released models). */
POLA_API pola_status pola_model_feature_shape(const pola_model *model, int height, int width, int stage,
                                              int *channels, int *feature_height, int *feature_width);

/* The model's description as one JSON object (what `pola info --json`
 * prints: family, config, classes, preprocess, parameters, ...). The string
 * lives as long as the model; NULL (with pola_last_error) on failure. */
POLA_API const char *pola_model_info_json(const pola_model *model);

/* How the model's plan pool has served runs so far: a run that found an idle
 * plan for its shape is a hit, one that had to build a plan a miss; an
 * eviction freed the least recently used idle plan; idle plans now held. */
typedef struct pola_plan_cache_stats {
  long long hits, misses, evictions, idle;
} pola_plan_cache_stats;

POLA_API pola_status pola_model_plan_cache_stats(pola_model *model, pola_plan_cache_stats *out);

/* ---- Preprocessing images --------------------------------------------
 * Images from files, from encoded bytes in memory (servers, bindings) or
 * from decoded pixels (numpy, PIL), prepared exactly as the model's metadata
 * prescribes (resize, center crop, normalize) into the NCHW floats pola_run
 * takes at the model's own size. */

/* One image of pola_model_preprocess_batch: a file (`path`), else an encoded
 * image (PNG, JPEG, GIF, BMP, PNM, ...) of `size` bytes at `data`, else
 * decoded 8-bit pixels: `height` rows of `width` pixels of `channels`
 * interleaved bytes (HWC, as numpy/PIL hold them): 1 = grey, 2 = grey +
 * alpha, 3 = RGB, 4 = RGBA, converted as PIL's convert('RGB'/'L') does
 * (alpha dropped, grey replicated). Zero-initialize it and set one. */
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

/* ---- Running ---------------------------------------------------------
 * One call runs the network on preprocessed NCHW floats and writes what
 * the options ask for: logits, the pooled embedding (the head's input), and
 * any stage's feature map (its tokens after its last block as an NCHW map,
 * no extra norm: what a detection or segmentation neck consumes). Only what
 * is asked for is computed. The input may come in several parts (a server
 * batching concurrent requests holds each request's images in its own array
 * and wants each one's outputs in its own arrays): the parts are run as one
 * batch, in part order, so each part gets exactly what a run over the parts
 * concatenated gives it.
 *
 * The model keeps one compiled plan per (batch, height, width, outputs) and
 * a few idle ones (least recently used first out), so alternating between
 * two sizes does not rebuild. */

/* The most stages a model has (the length of pola_run_output.stages). */
#define POLA_MAX_STAGES 8

/* Flags of pola_run_options.outputs. */
#define POLA_OUTPUT_LOGITS 1u /* batch x num_classes floats */
#define POLA_OUTPUT_POOLED 2u /* batch x pola_model_pooled_size() floats */

/* What a run takes and computes. Start from pola_run_options_default(): it
 * sets struct_size, so a program built against this header keeps working
 * with a later library whose options have grown. */
typedef struct pola_run_options {
  size_t struct_size;     /* sizeof(pola_run_options), set by the default */
  int batch;              /* images in the input, 1..4096 (default 1); 0 or the total with part_counts */
  int height, width;      /* 0, 0 (default): the model's own size; else any size pola_model_check_size accepts */
  unsigned outputs;       /* POLA_OUTPUT_* flags; default POLA_OUTPUT_LOGITS */
  unsigned stage_mask;    /* bit i: the feature map of stage i (0-based); default 0 */
  int parts;              /* input arrays, >= 1 (default 1) */
  const int *part_counts; /* NULL: one part of `batch` images; else `parts` counts >= 1, adding up to 1..4096 */
} pola_run_options;

/* Where one part's outputs go: for each output asked for, room for the
 * part's images times that output's floats per image (NCHW for stages);
 * pointers of outputs not asked for are ignored. Start from
 * pola_run_output_default(), which zeroes the pointers and sets
 * struct_size. */
typedef struct pola_run_output {
  size_t struct_size;             /* sizeof(pola_run_output), set by the default */
  float *logits;                  /* POLA_OUTPUT_LOGITS */
  float *pooled;                  /* POLA_OUTPUT_POOLED */
  float *stages[POLA_MAX_STAGES]; /* stage_mask bit i: stages[i] */
} pola_run_output;

POLA_API pola_run_options pola_run_options_default(void);
POLA_API pola_run_output pola_run_output_default(void);

/* Runs the model: inputs[i] holds part i's images (count x channels x height
 * x width floats, NCHW; count = batch, or part_counts[i]), and outputs[i]
 * receives its outputs (outputs is an array of options->parts structs, each
 * of outputs[0].struct_size bytes). Outputs must not overlap inputs. With
 * more than one part, outputs go through scratch memory first, so a failed
 * run writes none of them. The run's memory is checked before it is
 * allocated (see below). options may be NULL for the defaults. */
POLA_API pola_status pola_run(pola_model *model, const pola_run_options *options, const float *const *inputs,
                              const pola_run_output *outputs);

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
 * allocated by then); servers and bindings call pola_run_check_memory
 * before allocating a request's images. Memory that still runs out (another process took it
 * after the check) is POLA_ERROR_INTERNAL with a message saying so. */

/* What a run allocates, in bytes. */
typedef struct pola_memory_need {
  size_t working;   /* the plan's: activation arena, size-dependent tables, per-thread buffers */
  size_t inputs;    /* images * channels * height * width floats */
  size_t outputs;   /* every output asked for */
  size_t total;     /* working + inputs + outputs */
  size_t available; /* what a check finds available now; SIZE_MAX when nothing could be read */
} pola_memory_need;

/* Fills *out for the run `options` describes, allocating nothing (the plan's
 * graph is laid out, not built). POLA_ERROR_INPUT for options a run would
 * refuse. */
POLA_API pola_status pola_run_memory_need(pola_model *model, const pola_run_options *options, pola_memory_need *out);

/* POLA_OK if the run `options` describes fits in the memory available,
 * counting its inputs and outputs as still to be allocated (a plan already
 * built for the shape counts as allocated; idle plans are freed before
 * refusing); else POLA_ERROR_INPUT with the message the run would give. */
POLA_API pola_status pola_run_check_memory(pola_model *model, const pola_run_options *options);

/* ---- Reading logits ---------------------------------------------------- */

/* The k most probable classes of one row of `classes` logits, best first
 * (ties: the lower index first): the softmax exp(l - max) / sum computed in
 * double, the probabilities `pola classify`, `pola serve`, Python's
 * Model.classify and the Dask example all report. Writes min(k, classes)
 * entries to index and probability (either may be NULL). */
POLA_API pola_status pola_top_k(const float *logits, int classes, int k, int *index, double *probability);

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
  /* NULL or "raw" (as `pola convert`): of a training checkpoint holding both, the raw weights
   * ('model'); "ema": the EMA weights ('state_dict_ema', `pola convert --weights ema`), refused
   * for a file without that entry (a plain state dict, a safetensors or model file). Since ABI 2. */
  const char *weights;
} pola_convert_options;

POLA_API pola_convert_options pola_default_convert_options(void);

/* Converts `checkpoint` (a torch.save zip, a safetensors file, or a model
 * file to re-write) into the model file `output` (options may be NULL).
 * Everything is read and checked before anything is written, and the output
 * appears whole or not at all; an output naming one of the inputs is refused. */
POLA_API pola_status pola_convert(const char *checkpoint, const char *output, const pola_convert_options *options);

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
 * pola_alloc_floats: 2 MB aligned and advised as huge pages, on which the
 * core ran faster than on ordinary 4 KB pages (bench/attention/README.md). */
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

/* ---- Deprecated: removed in the next release ---------------------------
 * The names the API had before pola_run. Each is a thin wrapper over the
 * calls named in its warning and behaves as it did; move to those. */

/* pola_run of `batch` images at the model's own size, logits only. */
POLA_DEPRECATED("pola_run")
POLA_API pola_status pola_model_run(pola_model *model, const float *input, int batch, float *logits);

/* pola_run with options height and width set. */
POLA_DEPRECATED("pola_run with options.height and options.width")
POLA_API pola_status pola_model_run_sized(pola_model *model, const float *input, int batch, int height, int width,
                                          float *logits);

/* pola_run with options.parts and options.part_counts set; inputs and
 * logits hold one array per part. */
POLA_DEPRECATED("pola_run with options.parts and options.part_counts")
POLA_API pola_status pola_model_run_parts(pola_model *model, int parts, const float *const *inputs,
                                          const int *counts, float *const *logits);

/* pola_run with the stage_mask and POLA_OUTPUT_POOLED of the non-NULL
 * entries of stage_out (pola_model_num_stages() pointers) and pooled. */
POLA_DEPRECATED("pola_run with options.outputs and options.stage_mask")
POLA_API pola_status pola_model_features(pola_model *model, const float *input, int batch, int height, int width,
                                         float *const *stage_out, float *pooled);

/* pola_model_preprocess_batch of `count` files, then pola_run (memory is
 * checked before the images are decoded). */
POLA_DEPRECATED("pola_model_preprocess_batch and pola_run")
POLA_API pola_status pola_model_run_images(pola_model *model, const char *const *image_paths, int count,
                                           float *logits);

/* pola_model_preprocess_batch of one image given by path, bytes or pixels. */
POLA_DEPRECATED("pola_model_preprocess_batch with pola_image.path")
POLA_API pola_status pola_model_preprocess_image(const pola_model *model, const char *image_path, float *out);
POLA_DEPRECATED("pola_model_preprocess_batch with pola_image.data")
POLA_API pola_status pola_model_preprocess_image_bytes(const pola_model *model, const void *data, size_t size,
                                                       float *out);
POLA_DEPRECATED("pola_model_preprocess_batch with pola_image.pixels")
POLA_API pola_status pola_model_preprocess_pixels(const pola_model *model, const unsigned char *pixels, int height,
                                                  int width, int channels, float *out);

/* pola_run_memory_need / pola_run_check_memory for a logits run of `batch`
 * images of height x width. */
POLA_DEPRECATED("pola_run_memory_need")
POLA_API pola_status pola_model_memory_need(pola_model *model, int batch, int height, int width,
                                            pola_memory_need *out);
POLA_DEPRECATED("pola_run_check_memory")
POLA_API pola_status pola_model_check_memory(pola_model *model, int batch, int height, int width);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POLAFORMER_H */
