/* pola_run with parts: several callers' image arrays as one
 * engine call. With the shipped Fashion-MNIST model: parts of 1, 2 and 3
 * images give, part by part, exactly the logits of one run over
 * the six images concatenated; argument errors name the argument and write
 * no logits.
 *
 *   test_run_parts MODELS_DIR */
#include <math.h>

#include "api_test_util.h"
#include "polaformer/polaformer.h"

enum { PARTS = 3, TOTAL = 6 };

int main(int argc, char **argv) {
  pola_model *m = NULL;
  int c = 0, h = 0, w = 0, classes, i, j;
  size_t per_image;
  float *all, *want;
  float *part_in[PARTS], *part_out[PARTS];
  const int counts[PARTS] = {1, 2, 3};
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODELS_DIR\n", argv[0]);
    return 2;
  }
  if (pola_model_load(fixture_path(argv[1], "fashion_pola_pvt.pola"), NULL, &m) != POLA_OK) {
    fprintf(stderr, "%s\n", pola_last_error());
    return 2;
  }
  CHECK(pola_model_input_shape(m, &c, &h, &w) == POLA_OK);
  classes = pola_model_num_classes(m);
  per_image = (size_t)c * h * w;
  all = malloc(sizeof(float) * per_image * TOTAL);
  want = malloc(sizeof(float) * classes * TOTAL);
  for (i = 0; i < (int)(per_image * TOTAL); ++i) all[i] = (float)sin(0.37 * i) * 1.5f;
  CHECK(t_run(m, all, TOTAL, want) == POLA_OK);

  {
    int at = 0;
    for (i = 0; i < PARTS; ++i) {
      part_in[i] = malloc(sizeof(float) * per_image * counts[i]);
      part_out[i] = malloc(sizeof(float) * classes * counts[i]);
      memcpy(part_in[i], all + at * per_image, sizeof(float) * per_image * counts[i]);
      at += counts[i];
    }
  }
  CHECK(t_run_parts(m, PARTS, (const float *const *)part_in, counts, part_out) == POLA_OK);
  {
    int at = 0;
    for (i = 0; i < PARTS; ++i) {
      for (j = 0; j < counts[i] * classes; ++j) CHECK(part_out[i][j] == want[at * classes + j]);
      at += counts[i];
    }
  }

  /* Errors: each names its argument; the logits stay as they were. */
  for (j = 0; j < classes; ++j) part_out[0][j] = -7.0f;
  {
    const int zero[PARTS] = {1, 0, 3};
    CHECK(t_run_parts(m, PARTS, (const float *const *)part_in, zero, part_out) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "counts[1]") != NULL);
  }
  {
    const int huge[PARTS] = {1, 4096, 1};
    CHECK(t_run_parts(m, PARTS, (const float *const *)part_in, huge, part_out) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "4096") != NULL);
  }
  {
    float *missing_in[PARTS] = {part_in[0], NULL, part_in[2]};
    CHECK(t_run_parts(m, PARTS, (const float *const *)missing_in, counts, part_out) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "inputs[1]") != NULL);
  }
  CHECK(t_run_parts(m, 0, (const float *const *)part_in, counts, part_out) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "parts") != NULL);
  CHECK(t_run_parts(m, PARTS, NULL, counts, part_out) == POLA_ERROR_INPUT);
  {
    /* A non-finite input is refused for the whole call, and no part is written. */
    part_in[2][5] = NAN;
    CHECK(t_run_parts(m, PARTS, (const float *const *)part_in, counts, part_out) == POLA_ERROR_INPUT);
  }
  for (j = 0; j < classes; ++j) CHECK(part_out[0][j] == -7.0f);

  for (i = 0; i < PARTS; ++i) {
    free(part_in[i]);
    free(part_out[i]);
  }
  free(all);
  free(want);
  pola_model_free(m);
  if (g_failures) fprintf(stderr, "%d checks failed\n", g_failures);
  else printf("pola_run with parts: OK\n");
  return g_failures ? 1 : 0;
}
