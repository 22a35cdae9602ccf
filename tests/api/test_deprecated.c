/* The deprecated names, kept for one release as wrappers over pola_run and
 * pola_model_preprocess_batch: each still works and gives exactly what its
 * replacement gives, and refuses what it refused. The only file in the
 * repository that calls them, on purpose; their warnings are silenced here
 * alone (every other target builds with -Werror=deprecated-declarations).
 *
 *   test_deprecated FIXTURE_DIR     (model.pola, input.f32, photo.png) */
#define POLA_NO_DEPRECATION_WARNINGS
#include "api_test_util.h"

enum { BATCH = 3 };

static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

int main(int argc, char **argv) {
  pola_model *m = NULL;
  int c = 0, h = 0, w = 0, classes, stages;
  size_t per_image;
  float *input, *want, *got;
  if (argc != 2) {
    fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  if (pola_model_load(fixture_path(argv[1], "model.pola"), NULL, &m) != POLA_OK) {
    fprintf(stderr, "%s\n", pola_last_error());
    return 2;
  }
  CHECK(pola_model_input_shape(m, &c, &h, &w) == POLA_OK);
  classes = pola_model_num_classes(m);
  stages = pola_model_num_stages(m);
  per_image = (size_t)c * h * w;
  input = read_floats(fixture_path(argv[1], "input.f32"), BATCH * per_image);
  want = malloc(sizeof(float) * BATCH * classes);
  got = malloc(sizeof(float) * BATCH * classes);
  CHECK(t_run(m, input, BATCH, want) == POLA_OK);

  /* Runs: logits at the own size, at an explicit size, in parts. */
  CHECK(pola_model_run(m, input, BATCH, got) == POLA_OK && same(got, want, BATCH * classes));
  CHECK(pola_model_run_sized(m, input, BATCH, h, w, got) == POLA_OK && same(got, want, BATCH * classes));
  CHECK(pola_model_run_sized(m, input, BATCH, 0, 0, got) == POLA_ERROR_INPUT); /* 0 was never "own size" */
  {
    const float *parts[2];
    float *logits[2];
    const int counts[2] = {1, BATCH - 1};
    memset(got, 0, sizeof(float) * BATCH * classes);
    parts[0] = input;
    parts[1] = input + per_image;
    logits[0] = got;
    logits[1] = got + classes;
    CHECK(pola_model_run_parts(m, 2, parts, counts, logits) == POLA_OK && same(got, want, BATCH * classes));
    CHECK(pola_model_run_parts(m, 0, parts, counts, logits) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "parts") != NULL);
  }
  CHECK(pola_model_run(m, input, 0, got) == POLA_ERROR_INPUT && strstr(pola_last_error(), "batch") != NULL);

  /* Features: the deprecated call and pola_run agree on the last stage and the pooled embedding. */
  {
    int fc = 0, fh = 0, fw = 0;
    const int last = stages - 1;
    float *stage_old, *stage_new, *pooled_old, *pooled_new, *outs[POLA_MAX_STAGES] = {NULL};
    const size_t pooled = (size_t)pola_model_pooled_size(m);
    CHECK(pola_model_feature_shape(m, h, w, last, &fc, &fh, &fw) == POLA_OK);
    stage_old = malloc(sizeof(float) * BATCH * fc * fh * fw);
    stage_new = malloc(sizeof(float) * BATCH * fc * fh * fw);
    pooled_old = malloc(sizeof(float) * BATCH * pooled);
    pooled_new = malloc(sizeof(float) * BATCH * pooled);
    outs[last] = stage_old;
    CHECK(pola_model_features(m, input, BATCH, h, w, outs, pooled_old) == POLA_OK);
    outs[last] = stage_new;
    CHECK(t_features(m, input, BATCH, h, w, outs, pooled_new) == POLA_OK);
    CHECK(same(stage_old, stage_new, (size_t)BATCH * fc * fh * fw) && same(pooled_old, pooled_new, BATCH * pooled));
    CHECK(pola_model_features(m, input, BATCH, h, w, NULL, NULL) == POLA_ERROR_INPUT);
    free(stage_old);
    free(stage_new);
    free(pooled_old);
    free(pooled_new);
  }

  /* Images: a file, its bytes and the file run directly, against preprocess_batch. */
  {
    const char *photo = fixture_path(argv[1], "photo.png");
    float *x_old = malloc(sizeof(float) * per_image), *x_new = malloc(sizeof(float) * per_image);
    float logits_old[64], logits_new[64];
    unsigned char *png = NULL;
    long size = 0;
    FILE *f = fopen(photo, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
      png = malloc((size_t)size);
      if (fread(png, 1, (size_t)size, f) != (size_t)size) size = 0;
    }
    if (f) fclose(f);
    CHECK(classes <= 64 && size > 0);
    CHECK(t_preprocess_image(m, photo, x_new) == POLA_OK);
    CHECK(pola_model_preprocess_image(m, photo, x_old) == POLA_OK && same(x_old, x_new, per_image));
    CHECK(pola_model_preprocess_image_bytes(m, png, (size_t)size, x_old) == POLA_OK && same(x_old, x_new, per_image));
    CHECK(pola_model_preprocess_image_bytes(m, png, 0, x_old) == POLA_ERROR_INPUT);
    CHECK(pola_model_preprocess_pixels(m, png, 4, 4, 5, x_old) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "channels") != NULL);
    CHECK(t_run(m, x_new, 1, logits_new) == POLA_OK);
    CHECK(pola_model_run_images(m, &photo, 1, logits_old) == POLA_OK && same(logits_old, logits_new, classes));
    {
      const char *missing = fixture_path(argv[1], "no_such_image.png");
      CHECK(pola_model_run_images(m, &missing, 1, logits_old) == POLA_ERROR_INPUT);
      CHECK(strstr(pola_last_error(), "no_such_image.png") != NULL);
    }
    free(png);
    free(x_old);
    free(x_new);
  }

  /* Memory: the old logits-run queries answer as pola_run's do. */
  {
    pola_memory_need old_need, new_need;
    CHECK(pola_model_memory_need(m, BATCH, h, w, &old_need) == POLA_OK);
    CHECK(t_memory_need(m, BATCH, h, w, &new_need) == POLA_OK);
    CHECK(old_need.working == new_need.working && old_need.inputs == new_need.inputs &&
          old_need.outputs == new_need.outputs);
    CHECK(pola_model_check_memory(m, BATCH, h, w) == POLA_OK);
    CHECK(pola_model_check_memory(m, 0, h, w) == POLA_ERROR_INPUT);
  }

  free(input);
  free(want);
  free(got);
  pola_model_free(m);
  if (g_failures) fprintf(stderr, "%d checks failed\n", g_failures);
  else printf("deprecated wrappers: OK\n");
  return g_failures ? 1 : 0;
}
