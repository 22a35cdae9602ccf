/* The C API as a C99 program uses it: load errors, model description,
 * runs against the PyTorch reference's logits, image files, argument
 * checks, the per-thread error message, and that the caller's OpenMP
 * setting survives a run.
 *
 *   test_c_api FIXTURE_DIR   (made by make_api_fixture.py) */
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
  { /* precision (issue 19): fp32 by default, unknown values refused, auto resolved */
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
  pola_model_free(NULL); /* allowed */
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
  CHECK(pola_model_run(m, input, BATCH, got) == POLA_OK);
  for (i = 0; i < BATCH * CLASSES; ++i)
    if (want[i] > scale || -want[i] > scale) scale = want[i] > 0 ? want[i] : -want[i];
  /* float32 engine vs float64 reference over a few thousand tokens */
  err = max_abs_diff(got, want, BATCH * CLASSES);
  printf("run vs reference: max |diff| %.3g (scale %.3g)\n", err, scale);
  CHECK(err <= 1e-3 * scale);
  /* image 2 alone gives the same logits as inside the batch */
  CHECK(pola_model_run(m, input + 2 * per_image, 1, one) == POLA_OK);
  CHECK(max_abs_diff(one, got + 2 * CLASSES, CLASSES) <= 1e-4 * scale);

  CHECK(pola_model_run(m, input, 0, got) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "batch") != NULL);
  CHECK(pola_model_run(m, NULL, 1, got) == POLA_ERROR_INPUT);
  CHECK(pola_model_run(NULL, input, 1, got) == POLA_ERROR_INPUT);
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

  CHECK(pola_model_preprocess_image(m, photo, x) == POLA_OK);
  CHECK(pola_model_run(m, x, 1, from_array) == POLA_OK);
  CHECK(pola_model_run_images(m, two, 2, from_files) == POLA_OK);
  /* preprocessing then running equals running the file, for every batch slot */
  CHECK(max_abs_diff(from_array, from_files, CLASSES) <= 1e-5);
  CHECK(max_abs_diff(from_array, from_files + CLASSES, CLASSES) <= 1e-5);

  two[1] = missing;
  CHECK(pola_model_run_images(m, two, 2, from_files) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "no_such_image.png") != NULL);
  CHECK(pola_model_preprocess_image(m, text, x) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "not_a_model.txt") != NULL);
  CHECK(pola_model_run_images(m, two, 0, from_files) == POLA_ERROR_INPUT);
  CHECK(pola_model_run_images(m, NULL, 1, from_files) == POLA_ERROR_INPUT);
  free(x);
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
  CHECK(pola_model_run(m, input, 1, logits) == POLA_OK);
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
  test_run_matches_reference(m, argv[1]);
  test_images(m, argv[1]);
  test_keeps_caller_openmp_setting(m, argv[1]);
  pola_model_free(m);

  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  else printf("C API: all checks passed (library %s)\n", pola_version());
  return g_failures ? 1 : 0;
}
