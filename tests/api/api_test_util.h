/* Helpers shared by the C tests of the public API: a failure counter that
 * reports file:line, reading a raw float32 fixture file, and the common runs
 * (logits, features, parts, image files, one preprocessed image) spelled
 * with pola_run and pola_model_preprocess_batch. Plain C99. */
#ifndef POLA_API_TEST_UTIL_H
#define POLA_API_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polaformer/polaformer.h"

static int g_failures = 0;

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                      \
    }                                                                    \
  } while (0)

/* dir + "/" + name in a static buffer (one at a time). */
static const char *fixture_path(const char *dir, const char *name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

/* Reads exactly `count` floats from a raw little-endian float32 file; exits on failure. */
static float *read_floats(const char *path, size_t count) {
  FILE *f = fopen(path, "rb");
  float *data = (float *)malloc(count * sizeof(float));
  if (!f || !data || fread(data, sizeof(float), count, f) != count) {
    fprintf(stderr, "cannot read %zu floats from %s\n", count, path);
    exit(2);
  }
  fclose(f);
  return data;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  size_t i;
  for (i = 0; i < n; ++i) {
    double d = (double)a[i] - (double)b[i];
    if (d < 0) d = -d;
    if (d > m) m = d;
  }
  return m;
}


/* ---- The common runs through pola_run ---------------------------------- */

static pola_run_options t_options(int batch, int height, int width) {
  pola_run_options o = pola_run_options_default();
  o.batch = batch;
  o.height = height;
  o.width = width;
  return o;
}

/* Logits of `batch` images of height x width (0, 0: the model's own size). */
static pola_status t_run_sized(pola_model *m, const float *x, int batch, int height, int width, float *logits) {
  const pola_run_options o = t_options(batch, height, width);
  pola_run_output out = pola_run_output_default();
  const float *inputs[1];
  inputs[0] = x;
  out.logits = logits;
  return pola_run(m, &o, inputs, &out);
}

static pola_status t_run(pola_model *m, const float *x, int batch, float *logits) {
  return t_run_sized(m, x, batch, 0, 0, logits);
}

/* Stage maps (stage_out: pola_model_num_stages() pointers, NULL = not wanted) and/or the pooled embedding. */
static pola_status t_features(pola_model *m, const float *x, int batch, int height, int width,
                              float *const *stage_out, float *pooled) {
  pola_run_options o = t_options(batch, height, width);
  pola_run_output out = pola_run_output_default();
  const float *inputs[1];
  int i;
  inputs[0] = x;
  o.outputs = pooled ? POLA_OUTPUT_POOLED : 0u;
  out.pooled = pooled;
  for (i = 0; stage_out && i < pola_model_num_stages(m) && i < POLA_MAX_STAGES; ++i)
    if (stage_out[i]) {
      o.stage_mask |= 1u << i;
      out.stages[i] = stage_out[i];
    }
  return pola_run(m, &o, inputs, &out);
}

/* `parts` arrays of images as one run, each part's logits in its own array. */
static pola_status t_run_parts(pola_model *m, int parts, const float *const *inputs, const int *counts,
                               float *const *logits) {
  pola_run_options o = pola_run_options_default();
  pola_run_output outs[16];
  int i;
  o.batch = 0;
  o.parts = parts;
  o.part_counts = counts;
  if (parts > 16) return POLA_ERROR_INTERNAL;
  for (i = 0; i < parts; ++i) {
    outs[i] = pola_run_output_default();
    outs[i].logits = logits[i];
  }
  outs[0].struct_size = sizeof(pola_run_output); /* parts == 0 still reads outputs[0]'s stride */
  return pola_run(m, &o, inputs, outs);
}

/* Logits of image files: memory checked, then preprocessed and run as one batch. */
static pola_status t_run_images(pola_model *m, const char *const *paths, int count, float *logits) {
  const pola_run_options o = t_options(count, 0, 0);
  int c = 0, h = 0, w = 0, i;
  pola_image *images;
  float *x;
  pola_status status;
  if (!paths) return pola_model_preprocess_batch(m, NULL, count, logits, NULL);
  status = pola_run_check_memory(m, &o);
  if (status != POLA_OK) return status;
  status = pola_model_input_shape(m, &c, &h, &w);
  if (status != POLA_OK) return status;
  images = (pola_image *)calloc((size_t)count, sizeof(pola_image));
  x = (float *)malloc(sizeof(float) * (size_t)c * h * w * (size_t)count);
  for (i = 0; i < count; ++i) images[i].path = paths[i];
  status = pola_model_preprocess_batch(m, images, count, x, NULL);
  if (status == POLA_OK) status = t_run(m, x, count, logits);
  free(images);
  free(x);
  return status;
}

/* One image, from a file, encoded bytes or HWC pixels. */
static pola_status t_preprocess_image(const pola_model *m, const char *path, float *out) {
  pola_image image;
  memset(&image, 0, sizeof image);
  image.path = path;
  return pola_model_preprocess_batch(m, &image, 1, out, NULL);
}

static pola_status t_preprocess_bytes(const pola_model *m, const void *data, size_t size, float *out) {
  pola_image image;
  memset(&image, 0, sizeof image);
  image.data = data;
  image.size = size;
  return pola_model_preprocess_batch(m, &image, 1, out, NULL);
}

static pola_status t_preprocess_pixels(const pola_model *m, const unsigned char *pixels, int height, int width,
                                       int channels, float *out) {
  pola_image image;
  memset(&image, 0, sizeof image);
  image.pixels = pixels;
  image.height = height;
  image.width = width;
  image.channels = channels;
  return pola_model_preprocess_batch(m, &image, 1, out, NULL);
}

/* A logits run's memory: what it needs, and whether it fits. */
static pola_status t_memory_need(pola_model *m, int batch, int height, int width, pola_memory_need *need) {
  const pola_run_options o = t_options(batch, height, width);
  return pola_run_memory_need(m, &o, need);
}

static pola_status t_check_memory(pola_model *m, int batch, int height, int width) {
  const pola_run_options o = t_options(batch, height, width);
  return pola_run_check_memory(m, &o);
}

#endif
