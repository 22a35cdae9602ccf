/* One loaded model serving four threads at once gives exactly the results
 * of serial runs: every thread runs a mix of jobs (single images, a batch of
 * three, an image file) in a different order, all starting together, and
 * every result must be bit-identical to the same job run alone beforehand.
 * A plan (scratch memory) shared by two threads by mistake would mix their
 * activations and show up as a mismatch.
 *
 *   test_concurrency FIXTURE_DIR   (made by make_api_fixture.py) */
#include <pthread.h>

#include "api_test_util.h"
#include "polaformer/polaformer.h"

/* Many rounds: a race has a short window (a shared input buffer is read by
 * the first node only), and with 6 rounds a deliberately shared buffer went
 * unnoticed in 4 runs out of 5; with 200 it was caught every time. */
enum { THREADS = 4, ROUNDS = 200, CLASSES = 21, PER_IMAGE = 3 * 72 * 72, FIXTURE_IMAGES = 3 };
enum { JOBS = 6 }; /* 0..2: image i alone, 3: image 0 negated, 4: batch of 3, 5: the photo file */

static pola_model *g_model;
static float *g_input; /* FIXTURE_IMAGES + 1 images */
static char g_photo[4096];
static float g_expected[JOBS][FIXTURE_IMAGES * CLASSES];
static pthread_barrier_t g_start;

static int logits_count(int job) { return job == 4 ? FIXTURE_IMAGES * CLASSES : CLASSES; }

static pola_status run_job(int job, float *logits) {
  const char *photo = g_photo;
  if (job <= 3) return t_run(g_model, g_input + (size_t)job * PER_IMAGE, 1, logits);
  if (job == 4) return t_run(g_model, g_input, FIXTURE_IMAGES, logits);
  return t_run_images(g_model, &photo, 1, logits);
}

static void *worker(void *arg) {
  const int id = (int)(size_t)arg;
  float got[FIXTURE_IMAGES * CLASSES];
  int round, mismatches = 0;
  pthread_barrier_wait(&g_start);
  for (round = 0; round < ROUNDS; ++round) {
    const int job = (id + round * (id % 2 ? 5 : 1)) % JOBS; /* threads walk the jobs differently */
    if (run_job(job, got) != POLA_OK) {
      fprintf(stderr, "thread %d job %d: %s\n", id, job, pola_last_error());
      ++mismatches;
    } else if (memcmp(got, g_expected[job], sizeof(float) * logits_count(job)) != 0) {
      fprintf(stderr, "thread %d round %d job %d: logits differ from the serial run (max |diff| %.3g)\n", id, round,
              job, max_abs_diff(got, g_expected[job], logits_count(job)));
      ++mismatches;
    }
  }
  return (void *)(size_t)mismatches;
}

int main(int argc, char **argv) {
  pola_options opt = pola_default_options();
  pthread_t threads[THREADS];
  size_t total = 0;
  int i, job;
  if (argc != 2) {
    fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  opt.threads = 1; /* four callers, one worker each: 2 cores are plenty */
  if (pola_model_load(fixture_path(argv[1], "model.pola"), &opt, &g_model) != POLA_OK) {
    fprintf(stderr, "%s\n", pola_last_error());
    return 1;
  }
  g_input = (float *)malloc(sizeof(float) * PER_IMAGE * (FIXTURE_IMAGES + 1));
  {
    float *fixture = read_floats(fixture_path(argv[1], "input.f32"), (size_t)FIXTURE_IMAGES * PER_IMAGE);
    memcpy(g_input, fixture, sizeof(float) * PER_IMAGE * FIXTURE_IMAGES);
    for (i = 0; i < PER_IMAGE; ++i) g_input[FIXTURE_IMAGES * PER_IMAGE + i] = -fixture[i];
    free(fixture);
  }
  snprintf(g_photo, sizeof g_photo, "%s/photo.png", argv[1]);

  for (job = 0; job < JOBS; ++job) /* serial expectations */
    if (run_job(job, g_expected[job]) != POLA_OK) {
      fprintf(stderr, "serial job %d: %s\n", job, pola_last_error());
      return 1;
    }
  /* jobs really differ, so a swapped result cannot pass */
  CHECK(max_abs_diff(g_expected[0], g_expected[1], CLASSES) > 0);
  CHECK(max_abs_diff(g_expected[0], g_expected[3], CLASSES) > 0);
  CHECK(max_abs_diff(g_expected[0], g_expected[5], CLASSES) > 0);

  pthread_barrier_init(&g_start, NULL, THREADS);
  for (i = 0; i < THREADS; ++i) CHECK(pthread_create(&threads[i], NULL, worker, (void *)(size_t)i) == 0);
  for (i = 0; i < THREADS; ++i) {
    void *bad = NULL;
    pthread_join(threads[i], &bad);
    total += (size_t)bad;
  }
  pthread_barrier_destroy(&g_start);
  CHECK(total == 0);
  pola_model_free(g_model);
  free(g_input);
  if (g_failures) fprintf(stderr, "%d check(s) failed, %zu mismatching run(s)\n", g_failures, total);
  else printf("%d threads x %d rounds on one model: identical to serial runs\n", THREADS, ROUNDS);
  return g_failures ? 1 : 0;
}
