/* The C API as a C99 program uses it: load errors, model description,
 * runs against the PyTorch reference's logits, image files, argument
 * checks, the per-thread error message, and that the caller's OpenMP
 * setting survives a run.
 *
 *   test_c_api FIXTURE_DIR   (made by make_api_fixture.py) */
#include <math.h>
#include <omp.h>
#include <pthread.h>

#include "api_test_util.h"
#include "polaformer/polaformer.h"

enum { BATCH = 3, CLASSES = 21, CHANNELS = 3, SIZE = 72 };

static void test_load_errors(const char *dir) {
  pola_model *m = (pola_model *)&m; /* must be reset to NULL on failure */
  const char *missing = fixture_path(dir, "no_such_model.pola");
  CHECK(pola_model_load(missing, NULL, &m) == POLA_ERROR_INPUT);
  CHECK(m == NULL);
  CHECK(strstr(pola_last_error(), "no_such_model.pola") != NULL);

  CHECK(pola_model_load(fixture_path(dir, "photo.png"), NULL, &m) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "photo.png") != NULL);
  CHECK(pola_model_load(fixture_path(dir, "not_a_model.txt"), NULL, &m) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "not_a_model.txt") != NULL);

  CHECK(pola_model_load(NULL, NULL, &m) == POLA_ERROR_INPUT);
  CHECK(pola_model_load(fixture_path(dir, "model.pola"), NULL, NULL) == POLA_ERROR_INPUT);
  {
    pola_options bad = pola_default_options();
    bad.threads = -1;
    CHECK(pola_model_load(fixture_path(dir, "model.pola"), &bad, &m) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "threads") != NULL);
  }
  { /* precision: fp32 by default, unknown values refused, auto resolved */
    pola_options opt = pola_default_options();
    CHECK(opt.precision == POLA_PRECISION_FP32);
    opt.precision = 7;
    CHECK(pola_model_load(fixture_path(dir, "model.pola"), &opt, &m) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "precision") != NULL);
    opt.precision = POLA_PRECISION_AUTO;
    CHECK(pola_model_load(fixture_path(dir, "model.pola"), &opt, &m) == POLA_OK);
    CHECK(strcmp(pola_model_precision(m), "fp32") == 0 || strcmp(pola_model_precision(m), "bf16") == 0);
    pola_model_free(m);
    m = NULL;
    CHECK(pola_model_precision(NULL) == NULL);
  }
  { /* threads 0 (the default) resolves to the cores; a count given is kept */
    pola_options opt = pola_default_options();
    CHECK(pola_model_load(fixture_path(dir, "model.pola"), &opt, &m) == POLA_OK);
    CHECK(pola_model_threads(m) == omp_get_num_procs());
    pola_model_free(m);
    opt.threads = 3;
    CHECK(pola_model_load(fixture_path(dir, "model.pola"), &opt, &m) == POLA_OK);
    CHECK(pola_model_threads(m) == 3);
    pola_model_free(m);
    m = NULL;
    CHECK(pola_model_threads(NULL) == 0);
  }
  pola_model_free(NULL); /* allowed */
}

/* pola_top_k: the softmax in double every door reports, best first, ties to the lower index. */
static void test_top_k(void) {
  const float logits[4] = {1.0f, 3.0f, 3.0f, -2.0f};
  const double sum = exp(1.0 - 3.0) + exp(0.0) + exp(0.0) + exp(-2.0 - 3.0);
  int index[4] = {0, 0, 0, 0};
  double p[4] = {0, 0, 0, 0};
  CHECK(pola_top_k(logits, 4, 9, index, p) == POLA_OK); /* k beyond the classes: all of them */
  CHECK(index[0] == 1 && index[1] == 2 && index[2] == 0 && index[3] == 3);
  CHECK(p[0] == 1.0 / sum && p[1] == 1.0 / sum && p[2] == exp(-2.0) / sum && p[3] == exp(-5.0) / sum);
  CHECK(pola_top_k(logits, 4, 1, NULL, p) == POLA_OK && p[0] == 1.0 / sum);
  CHECK(pola_top_k(logits, 4, 0, index, p) == POLA_ERROR_INPUT);
  CHECK(pola_top_k(logits, 0, 1, index, p) == POLA_ERROR_INPUT);
  CHECK(pola_top_k(NULL, 4, 1, index, p) == POLA_ERROR_INPUT && strstr(pola_last_error(), "logits") != NULL);
}

static void test_description(pola_model *m) {
  int c = 0, h = 0, w = 0;
  CHECK(pola_model_input_shape(m, &c, &h, &w) == POLA_OK);
  CHECK(c == CHANNELS && h == SIZE && w == SIZE);
  CHECK(pola_model_input_shape(NULL, &c, &h, &w) == POLA_ERROR_INPUT);
  CHECK(pola_model_num_classes(m) == CLASSES);
  CHECK(pola_model_num_classes(NULL) == 0);
  CHECK(strcmp(pola_model_class_name(m, 0), "class_0") == 0);
  CHECK(strcmp(pola_model_class_name(m, CLASSES - 1), "class_20") == 0);
  CHECK(pola_model_class_name(m, CLASSES) == NULL);
  CHECK(pola_model_class_name(m, -1) == NULL);
  CHECK(pola_model_class_name(NULL, 0) == NULL);
}

static void test_run_matches_reference(pola_model *m, const char *dir) {
  const size_t per_image = (size_t)CHANNELS * SIZE * SIZE;
  float *input = read_floats(fixture_path(dir, "input.f32"), BATCH * per_image);
  float *want = read_floats(fixture_path(dir, "logits.f32"), BATCH * CLASSES);
  float got[BATCH * CLASSES], one[CLASSES];
  double scale = 1, err;
  size_t i;
  CHECK(t_run(m, input, BATCH, got) == POLA_OK);
  for (i = 0; i < BATCH * CLASSES; ++i)
    if (want[i] > scale || -want[i] > scale) scale = want[i] > 0 ? want[i] : -want[i];
  /* float32 engine vs float64 reference over a few thousand tokens: the
     engine sits near 1e-6 of the scale, the parity suites' gate is 1e-4 */
  err = max_abs_diff(got, want, BATCH * CLASSES);
  printf("run vs reference: max |diff| %.3g (scale %.3g)\n", err, scale);
  CHECK(err <= 1e-4 * scale);
  /* image 2 alone gives the same logits as inside the batch */
  CHECK(t_run(m, input + 2 * per_image, 1, one) == POLA_OK);
  CHECK(max_abs_diff(one, got + 2 * CLASSES, CLASSES) <= 1e-4 * scale);

  CHECK(t_run(m, input, 0, got) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "batch") != NULL);
  CHECK(t_run(m, NULL, 1, got) == POLA_ERROR_INPUT);
  CHECK(t_run(NULL, input, 1, got) == POLA_ERROR_INPUT);
  free(input);
  free(want);
}

static void test_images(pola_model *m, const char *dir) {
  const size_t per_image = (size_t)CHANNELS * SIZE * SIZE;
  float *x = (float *)malloc(per_image * sizeof(float));
  float from_array[CLASSES], from_files[2 * CLASSES];
  char photo[4096], missing[4096], text[4096];
  const char *two[2];
  snprintf(photo, sizeof photo, "%s/photo.png", dir);
  snprintf(missing, sizeof missing, "%s/no_such_image.png", dir);
  snprintf(text, sizeof text, "%s/not_a_model.txt", dir);
  two[0] = photo;
  two[1] = photo;

  CHECK(t_preprocess_image(m, photo, x) == POLA_OK);
  CHECK(t_run(m, x, 1, from_array) == POLA_OK);
  CHECK(t_run_images(m, two, 2, from_files) == POLA_OK);
  /* preprocessing then running equals running the file, for every batch slot */
  CHECK(max_abs_diff(from_array, from_files, CLASSES) <= 1e-5);
  CHECK(max_abs_diff(from_array, from_files + CLASSES, CLASSES) <= 1e-5);

  two[1] = missing;
  CHECK(t_run_images(m, two, 2, from_files) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "no_such_image.png") != NULL);
  CHECK(t_preprocess_image(m, text, x) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "not_a_model.txt") != NULL);
  CHECK(t_run_images(m, two, 0, from_files) == POLA_ERROR_INPUT);
  CHECK(t_run_images(m, NULL, 1, from_files) == POLA_ERROR_INPUT);
  free(x);
}

/* Bytes of a whole file, malloc'd; *size receives the length. */
static unsigned char *read_bytes(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *data;
  long n;
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = (unsigned char *)malloc((size_t)n + 1);
  if (fread(data, 1, (size_t)n, f) != (size_t)n) exit(2);
  fclose(f);
  *size = (size_t)n;
  return data;
}

/* Images in memory (encoded bytes, decoded pixels) prepare exactly as the
 * file does, and bad ones are refused. */
static void test_images_in_memory(pola_model *m, const char *dir) {
  enum { PHOTO_H = 300, PHOTO_W = 451 };
  const size_t per_image = (size_t)CHANNELS * SIZE * SIZE;
  float *want = (float *)malloc(per_image * sizeof(float));
  float *got = (float *)malloc(per_image * sizeof(float));
  size_t png_size = 0, rgb_size = 0, rgba_size = 0, text_size = 0;
  unsigned char *png = read_bytes(fixture_path(dir, "photo.png"), &png_size);
  unsigned char *rgb = read_bytes(fixture_path(dir, "photo_rgb.u8"), &rgb_size);
  unsigned char *rgba = read_bytes(fixture_path(dir, "photo_rgba.u8"), &rgba_size);
  unsigned char *text = read_bytes(fixture_path(dir, "not_a_model.txt"), &text_size);
  CHECK(rgb_size == (size_t)PHOTO_H * PHOTO_W * 3 && rgba_size == (size_t)PHOTO_H * PHOTO_W * 4);
  CHECK(t_preprocess_image(m, fixture_path(dir, "photo.png"), want) == POLA_OK);

  CHECK(t_preprocess_bytes(m, png, png_size, got) == POLA_OK);
  CHECK(max_abs_diff(want, got, per_image) == 0);
  CHECK(t_preprocess_pixels(m, rgb, PHOTO_H, PHOTO_W, 3, got) == POLA_OK);
  CHECK(max_abs_diff(want, got, per_image) == 0);
  CHECK(t_preprocess_pixels(m, rgba, PHOTO_H, PHOTO_W, 4, got) == POLA_OK);
  CHECK(max_abs_diff(want, got, per_image) == 0);
  /* the wrong geometry gives another image, not the same one */
  CHECK(t_preprocess_pixels(m, rgb, PHOTO_W, PHOTO_H, 3, got) == POLA_OK);
  CHECK(max_abs_diff(want, got, per_image) > 0.1);

  CHECK(t_preprocess_bytes(m, text, text_size, got) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "image bytes") != NULL);
  CHECK(t_preprocess_bytes(m, png, png_size / 2, got) == POLA_ERROR_INPUT);
  CHECK(t_preprocess_bytes(m, png, 0, got) == POLA_ERROR_INPUT);
  CHECK(t_preprocess_bytes(m, NULL, 10, got) == POLA_ERROR_INPUT);
  CHECK(t_preprocess_pixels(m, rgb, PHOTO_H, PHOTO_W, 5, got) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "channels") != NULL);
  CHECK(t_preprocess_pixels(m, rgb, 0, PHOTO_W, 3, got) == POLA_ERROR_INPUT);
  CHECK(t_preprocess_pixels(m, rgb, 1 << 30, 1 << 30, 3, got) == POLA_ERROR_INPUT);
  CHECK(t_preprocess_pixels(NULL, rgb, PHOTO_H, PHOTO_W, 3, got) == POLA_ERROR_INPUT);

  { /* the batch decoder: each kind of image as alone; the lowest failing image is named */
    float *batch = (float *)malloc(5 * per_image * sizeof(float));
    pola_image images[5];
    int failed = 7, i;
    memset(images, 0, sizeof images);
    images[1].data = png;
    images[1].size = png_size;
    images[2].pixels = rgba;
    images[2].height = PHOTO_H;
    images[2].width = PHOTO_W;
    images[2].channels = 4;
    images[3].data = text; /* not an image */
    images[3].size = text_size;
    images[4] = images[2];
    images[4].channels = 5; /* refused too, but later in the batch */
    images[0].path = fixture_path(dir, "photo.png");
    CHECK(pola_model_preprocess_batch(m, images, 3, batch, &failed) == POLA_OK);
    CHECK(failed == -1);
    for (i = 0; i < 3; ++i) CHECK(max_abs_diff(want, batch + (size_t)i * per_image, per_image) == 0);
    CHECK(pola_model_preprocess_batch(m, images, 5, batch, &failed) == POLA_ERROR_INPUT);
    CHECK(failed == 3);
    CHECK(strstr(pola_last_error(), "image bytes") != NULL);
    CHECK(pola_model_preprocess_batch(m, images + 4, 1, batch, &failed) == POLA_ERROR_INPUT);
    CHECK(failed == 0 && strstr(pola_last_error(), "channels") != NULL);
    CHECK(pola_model_preprocess_batch(m, images, 0, batch, &failed) == POLA_OK && failed == -1);
    CHECK(pola_model_preprocess_batch(m, images, -1, batch, NULL) == POLA_ERROR_INPUT);
    CHECK(pola_model_preprocess_batch(NULL, images, 1, batch, &failed) == POLA_ERROR_INPUT);
    free(batch);
  }
  {
    const char *info = pola_model_info_json(m);
    CHECK(info != NULL);
    CHECK(info && strstr(info, "\"num_classes\":21") != NULL);
    CHECK(info && strstr(info, "\"family\":") != NULL);
    CHECK(info && pola_model_info_json(m) == info); /* made once, lives with the model */
    CHECK(pola_model_info_json(NULL) == NULL);
  }
  free(want);
  free(got);
  free(png);
  free(rgb);
  free(rgba);
  free(text);
}

static void *fail_in_other_thread(void *arg) {
  pola_model *m = NULL;
  (void)arg;
  CHECK(pola_last_error()[0] == '\0'); /* a fresh thread has seen no failure */
  CHECK(pola_model_load("/nonexistent/other_thread.pola", NULL, &m) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "other_thread.pola") != NULL);
  return NULL;
}

static void test_error_is_per_thread(void) {
  pola_model *m = NULL;
  pthread_t t;
  CHECK(pola_model_load("/nonexistent/this_thread.pola", NULL, &m) == POLA_ERROR_INPUT);
  CHECK(pthread_create(&t, NULL, fail_in_other_thread, NULL) == 0);
  pthread_join(t, NULL);
  CHECK(strstr(pola_last_error(), "this_thread.pola") != NULL);
}

static void test_keeps_caller_openmp_setting(pola_model *m, const char *dir) {
  const size_t per_image = (size_t)CHANNELS * SIZE * SIZE;
  float *input = read_floats(fixture_path(dir, "input.f32"), per_image);
  float logits[CLASSES];
  omp_set_num_threads(3);
  CHECK(t_run(m, input, 1, logits) == POLA_OK);
  CHECK(omp_get_max_threads() == 3);
  free(input);
}

int main(int argc, char **argv) {
  pola_model *m = NULL;
  pola_options opt = pola_default_options();
  if (argc != 2) {
    fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  CHECK(opt.threads == 0);
  CHECK(strlen(pola_version()) >= 5 && strchr(pola_version(), '.') != NULL);
  test_load_errors(argv[1]);
  test_error_is_per_thread();

  opt.threads = 2;
  CHECK(pola_model_load(fixture_path(argv[1], "model.pola"), &opt, &m) == POLA_OK);
  if (!m) {
    fprintf(stderr, "cannot load the fixture model: %s\n", pola_last_error());
    return 1;
  }
  test_description(m);
  test_top_k();
  test_run_matches_reference(m, argv[1]);
  test_images(m, argv[1]);
  test_images_in_memory(m, argv[1]);
  test_keeps_caller_openmp_setting(m, argv[1]);
  pola_model_free(m);

  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  else printf("C API: all checks passed (library %s)\n", pola_version());
  return g_failures ? 1 : 0;
}
