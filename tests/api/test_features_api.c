/* Any input size and backbone features through the C API: logits and every
 * stage's NCHW features at a non-square size against the PyTorch reference
 * (fixture DIR/sized, made by make_api_fixture.py), refused sizes, the
 * only-what-is-asked contract, and the plan cache's counts. Plain C99.
 *
 *   test_features_api FIXTURE_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_test_util.h"
#include "polaformer/polaformer.h"

#define H 64
#define W 96
#define BATCH 2
#define STAGES 4

static double max_abs(const float *a, size_t n) {
  double m = 0;
  size_t i;
  for (i = 0; i < n; ++i) {
    double v = a[i] < 0 ? -(double)a[i] : (double)a[i];
    if (v > m) m = v;
  }
  return m;
}

/* max|engine - ref| <= 1e-4 max|ref|, as the parity tests. */
static int close_to(const float *engine, const float *ref, size_t n, const char *what) {
  double diff = max_abs_diff(engine, ref, n), tol = 1e-4 * max_abs(ref, n);
  if (diff <= tol) return 1;
  fprintf(stderr, "%s: max|diff| %g > tol %g\n", what, diff, tol);
  return 0;
}

int main(int argc, char **argv) {
  char dir[2048], path[2100];
  int shapes[STAGES][3], i, c, h, w;
  size_t floats[STAGES], input_floats = (size_t)BATCH * 3 * H * W;
  float *input, *ref_logits, *ref_stage[STAGES], *ref_pooled, *logits, *out[STAGES], *pooled;
  pola_model *m = NULL;
  pola_plan_cache_stats s0, s1, s2;
  FILE *f;
  if (argc != 2) {
    fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  snprintf(dir, sizeof dir, "%s/sized", argv[1]);
  f = fopen(fixture_path(dir, "shapes.txt"), "r");
  if (!f) return 2;
  for (i = 0; i < STAGES; ++i)
    if (fscanf(f, "%d %d %d", &shapes[i][0], &shapes[i][1], &shapes[i][2]) != 3) return 2;
  fclose(f);

  snprintf(path, sizeof path, "%s/model.pola", dir);
  if (pola_model_load(path, NULL, &m) != POLA_OK) {
    fprintf(stderr, "load: %s\n", pola_last_error());
    return 1;
  }
  input = read_floats(fixture_path(dir, "sized_input.f32"), input_floats);
  ref_logits = read_floats(fixture_path(dir, "sized_logits.f32"), BATCH * 21);
  CHECK(pola_model_num_stages(m) == STAGES);
  for (i = 0; i < STAGES; ++i) {
    char name[32];
    CHECK(pola_model_feature_shape(m, H, W, i, &c, &h, &w) == POLA_OK);
    CHECK(c == shapes[i][0] && h == shapes[i][1] && w == shapes[i][2]);
    floats[i] = (size_t)BATCH * c * h * w;
    snprintf(name, sizeof name, "stage%d.f32", i + 1);
    ref_stage[i] = read_floats(fixture_path(dir, name), floats[i]);
    out[i] = (float *)malloc(floats[i] * sizeof(float));
  }
  ref_pooled = read_floats(fixture_path(dir, "pooled.f32"), (size_t)BATCH * pola_model_pooled_size(m));
  logits = (float *)malloc(BATCH * 21 * sizeof(float));
  pooled = (float *)malloc((size_t)BATCH * pola_model_pooled_size(m) * sizeof(float));

  /* Sizes: the model's multiple is 8 (patches 4,1,1,2); 66 is refused with the nearest ones. */
  CHECK(pola_model_check_size(m, H, W) == POLA_OK);
  CHECK(pola_model_check_size(m, 66, W) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "height 64 or 72") != NULL);
  CHECK(t_run_sized(m, input, BATCH, 66, W, logits) == POLA_ERROR_INPUT);
  CHECK(pola_model_feature_shape(m, H, W, STAGES, &c, &h, &w) == POLA_ERROR_INPUT);
  CHECK(t_features(m, input, BATCH, H, W, NULL, NULL) == POLA_ERROR_INPUT);

  /* Logits at 64 x 96. */
  CHECK(t_run_sized(m, input, BATCH, H, W, logits) == POLA_OK);
  CHECK(close_to(logits, ref_logits, BATCH * 21, "logits at 64x96"));

  /* Stages 1 and 3 only (caller buffers), then everything with the pooled embedding. */
  {
    float *some[STAGES] = {NULL, NULL, NULL, NULL};
    float sentinel = -12345.f;
    for (i = 0; i < STAGES; ++i) out[i][0] = sentinel;
    some[0] = out[0];
    some[2] = out[2];
    CHECK(t_features(m, input, BATCH, H, W, some, NULL) == POLA_OK);
    CHECK(close_to(out[0], ref_stage[0], floats[0], "stage 1 alone"));
    CHECK(close_to(out[2], ref_stage[2], floats[2], "stage 3 alone"));
    CHECK(out[1][0] == sentinel && out[3][0] == sentinel); /* not asked, not touched */
  }
  CHECK(t_features(m, input, BATCH, H, W, out, pooled) == POLA_OK);
  for (i = 0; i < STAGES; ++i) {
    char what[32];
    snprintf(what, sizeof what, "stage %d", i + 1);
    CHECK(close_to(out[i], ref_stage[i], floats[i], what));
  }
  CHECK(close_to(pooled, ref_pooled, (size_t)BATCH * pola_model_pooled_size(m), "pooled"));

  /* The plan cache: alternating two sizes builds each plan once. */
  CHECK(pola_model_plan_cache_stats(m, &s0) == POLA_OK);
  for (i = 0; i < 6; ++i) {
    const float *x = input;
    float *native_input = NULL;
    if (i % 2) {
      CHECK(t_run_sized(m, x, BATCH, H, W, logits) == POLA_OK);
    } else {
      native_input = (float *)calloc((size_t)BATCH * 3 * 72 * 72, sizeof(float));
      CHECK(t_run(m, native_input, BATCH, logits) == POLA_OK); /* 72 x 72, the model's own */
      free(native_input);
    }
  }
  CHECK(pola_model_plan_cache_stats(m, &s1) == POLA_OK);
  CHECK(s1.misses - s0.misses == 1); /* only the first batch-2 72 x 72 run builds */
  CHECK(s1.hits - s0.hits == 5);
  CHECK(s1.evictions - s0.evictions <= 1); /* room made once for the new plan, never again */
  /* More distinct shapes than the pool keeps: the oldest are evicted, the pool stays bounded. */
  for (i = 1; i <= 6; ++i) {
    const int side = 8 * (i + 8); /* 72, 80, ..., 112 wide */
    float *x = (float *)calloc((size_t)3 * H * side, sizeof(float));
    CHECK(t_run_sized(m, x, 1, H, side, logits) == POLA_OK);
    free(x);
  }
  CHECK(pola_model_plan_cache_stats(m, &s2) == POLA_OK);
  CHECK(s2.misses - s1.misses == 6);
  CHECK(s2.evictions - s1.evictions >= 3);
  CHECK(s2.idle <= 4);
  CHECK(s2.idle + s2.evictions == s2.misses + 1); /* +1: the plan built at load; none leaks */
  CHECK(pola_model_plan_cache_stats(NULL, &s2) == POLA_ERROR_INPUT);

  pola_model_free(m);
  for (i = 0; i < STAGES; ++i) {
    free(out[i]);
    free(ref_stage[i]);
  }
  free(input);
  free(ref_logits);
  free(ref_pooled);
  free(logits);
  free(pooled);
  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  else printf("features api: all checks passed\n");
  return g_failures ? 1 : 0;
}
