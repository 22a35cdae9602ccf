/* A run the machine cannot hold is refused before anything is allocated:
 * POLA_ERROR_INPUT, with a message naming what the run needs and what is
 * available, and the process's peak resident memory (VmHWM) not grown by
 * the run. The "machine" here is POLA_MEMORY_LIMIT_BYTES = 64 MiB, so the
 * test needs no large computer; with the shipped Fashion-MNIST model (32x32
 * inputs) a 2048x2048 image needs ~0.3 GiB and 4096 images at 32x32 about
 * as much. Runs that fit under the same limit still run, with unchanged
 * logits.
 *
 *   test_memory_refusal MODELS_DIR */
#define _POSIX_C_SOURCE 200112L

#include <stdlib.h>

#include "api_test_util.h"
#include "polaformer/polaformer.h"

enum { BIG = 2048, MANY = 4096 };
#define LIMIT_TEXT "67108864" /* 64 MiB */

/* The process's peak resident memory so far, in KiB. */
static long peak_rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kib = strtol(line + 6, NULL, 10);
  fclose(f);
  return kib;
}

/* The refusal names the shape, the need, the amount available and where that figure comes from. */
static int names_need_and_available(const char *message, const char *shape) {
  return strstr(message, shape) != NULL && strstr(message, " needs ") != NULL &&
         strstr(message, "64.0 MiB is available (POLA_MEMORY_LIMIT_BYTES)") != NULL;
}

/* Far below the ~300 MiB each refused run would need. */
static const long kMaxGrowthKiB = 32 * 1024;

int main(int argc, char **argv) {
  pola_model *m = NULL;
  pola_options opt = pola_default_options();
  int c = 0, h = 0, w = 0, classes, i;
  size_t per_image;
  float *small, *logits, *want, *big, *many, *stage1;
  const char *paths[MANY];
  char sample[4096];
  long before;
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODELS_DIR\n", argv[0]);
    return 2;
  }
  opt.threads = 1;
  if (pola_model_load(fixture_path(argv[1], "fashion_pola_pvt.pola"), &opt, &m) != POLA_OK) {
    fprintf(stderr, "%s\n", pola_last_error());
    return 2;
  }
  snprintf(sample, sizeof sample, "%s/samples/0000_ankle-boot.png", argv[1]);
  CHECK(pola_model_input_shape(m, &c, &h, &w) == POLA_OK);
  classes = pola_model_num_classes(m);
  per_image = (size_t)c * h * w;
  small = malloc(sizeof(float) * per_image * 4 * 8 * 8); /* 4 images of 256x256 */
  logits = calloc((size_t)MANY * classes, sizeof(float));
  want = calloc((size_t)MANY * classes, sizeof(float));
  for (i = 0; i < (int)(per_image * 4 * 64); ++i) small[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
  /* Reference logits without any limit (their plans are then cached: the later runs use other shapes). */
  CHECK(t_run_sized(m, small, 2, 256, 256, want) == POLA_OK);

  CHECK(setenv("POLA_MEMORY_LIMIT_BYTES", LIMIT_TEXT, 1) == 0);
  /* Zero pages, never written: reading them costs no resident memory. */
  big = calloc((size_t)c * BIG * BIG, sizeof(float));
  many = calloc(per_image * MANY, sizeof(float));
  stage1 = calloc((size_t)32 * (BIG / 4) * (BIG / 4), sizeof(float));

  before = peak_rss_kib();
  CHECK(t_run_sized(m, big, 1, BIG, BIG, logits) == POLA_ERROR_INPUT);
  CHECK(names_need_and_available(pola_last_error(), "a batch of 1 image of 2048x2048"));
  CHECK(peak_rss_kib() - before < kMaxGrowthKiB);
  fprintf(stderr, "pola_run: %s\n", pola_last_error());

  before = peak_rss_kib();
  {
    float *stages[4] = {stage1, NULL, NULL, NULL};
    CHECK(t_features(m, big, 1, BIG, BIG, stages, NULL) == POLA_ERROR_INPUT);
    CHECK(names_need_and_available(pola_last_error(), "2048x2048"));
  }
  CHECK(peak_rss_kib() - before < kMaxGrowthKiB);

  before = peak_rss_kib();
  CHECK(t_run(m, many, MANY, logits) == POLA_ERROR_INPUT);
  CHECK(names_need_and_available(pola_last_error(), "a batch of 4096 images of 32x32"));
  CHECK(peak_rss_kib() - before < kMaxGrowthKiB);

  /* Image files: refused before any is decoded. */
  for (i = 0; i < MANY; ++i) paths[i] = sample;
  before = peak_rss_kib();
  CHECK(t_run_images(m, paths, MANY, logits) == POLA_ERROR_INPUT);
  CHECK(names_need_and_available(pola_last_error(), "a batch of 4096 images of 32x32"));
  CHECK(peak_rss_kib() - before < kMaxGrowthKiB);

  {
    const float *inputs[2];
    float *outs[2];
    const int counts[2] = {MANY / 2, MANY / 2};
    inputs[0] = many;
    inputs[1] = many + per_image * (MANY / 2);
    outs[0] = logits;
    outs[1] = logits + (size_t)classes * (MANY / 2);
    before = peak_rss_kib();
    CHECK(t_run_parts(m, 2, inputs, counts, outs) == POLA_ERROR_INPUT);
    CHECK(names_need_and_available(pola_last_error(), "a batch of 4096 images of 32x32"));
    CHECK(peak_rss_kib() - before < kMaxGrowthKiB);
  }

  /* What fits under the limit still runs, and gives the same logits. */
  CHECK(t_run_sized(m, small, 4, 256, 256, logits) == POLA_OK);
  CHECK(max_abs_diff(logits, want, (size_t)2 * classes) < 1e-4); /* another batch size: float rounding only */
  CHECK(t_run(m, small, 64, logits) == POLA_OK);

  /* A limit that is not a number is named, not ignored. */
  CHECK(setenv("POLA_MEMORY_LIMIT_BYTES", "64M", 1) == 0);
  CHECK(t_run_sized(m, small, 1, 128, 128, logits) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "POLA_MEMORY_LIMIT_BYTES='64M' is not a number of bytes") != NULL);

  /* The need and the check, as a server uses them before allocating a request's images. */
  CHECK(setenv("POLA_MEMORY_LIMIT_BYTES", LIMIT_TEXT, 1) == 0);
  {
    pola_memory_need need;
    char text[32];
    memset(&need, 0, sizeof need);
    CHECK(t_memory_need(m, 1, BIG, BIG, &need) == POLA_OK);
    CHECK(need.inputs == sizeof(float) * BIG * BIG);
    CHECK(need.outputs == sizeof(float) * (size_t)classes);
    CHECK(need.total == need.working + need.inputs + need.outputs);
    CHECK(need.working > (size_t)200 << 20); /* the plan's arena and tables at 2048x2048 */
    CHECK(need.available == (size_t)64 << 20);
    before = peak_rss_kib();
    CHECK(t_check_memory(m, 1, BIG, BIG) == POLA_ERROR_INPUT);
    CHECK(names_need_and_available(pola_last_error(), "a batch of 1 image of 2048x2048"));
    CHECK(peak_rss_kib() - before < kMaxGrowthKiB);
    /* The check is exact: the total fits a limit of the total, not one byte less. */
    snprintf(text, sizeof text, "%lu", (unsigned long)need.total);
    CHECK(setenv("POLA_MEMORY_LIMIT_BYTES", text, 1) == 0);
    CHECK(t_check_memory(m, 1, BIG, BIG) == POLA_OK);
    snprintf(text, sizeof text, "%lu", (unsigned long)need.total - 1);
    CHECK(setenv("POLA_MEMORY_LIMIT_BYTES", text, 1) == 0);
    CHECK(t_check_memory(m, 1, BIG, BIG) == POLA_ERROR_INPUT);
    CHECK(t_memory_need(m, 0, 32, 32, &need) == POLA_ERROR_INPUT);
    CHECK(t_check_memory(m, 1, 100, 100) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "100x100") != NULL);
    CHECK(t_memory_need(NULL, 1, 32, 32, &need) == POLA_ERROR_INPUT);
  }

  free(small);
  free(logits);
  free(want);
  free(big);
  free(many);
  free(stage1);
  pola_model_free(m);
  if (g_failures) fprintf(stderr, "%d checks failed\n", g_failures);
  else printf("memory refusals: OK\n");
  return g_failures ? 1 : 0;
}
