/* classify_c: the smallest useful program on the PolaFormer C API.
 *
 *   classify_c MODEL.pola IMAGE [TOP]
 *
 * Prints the TOP (default 5) most probable classes of IMAGE, one per line:
 * "<class index>\t<softmax probability>\t<class name>". Exit codes follow the
 * library's: 0 ok, 1 bad input, 2 internal error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <polaformer/polaformer.h>

static int fail(pola_status status) {
  /* pola_last_error() says what is wrong, not which call found it. */
  fprintf(stderr, "classify_c: %s\n", pola_last_error());
  return (int)status;
}

/* Probabilities from logits, computed in place (shifted for stability). */
static void softmax(float *x, int n) {
  float top = x[0];
  double sum = 0;
  int i;
  for (i = 1; i < n; ++i)
    if (x[i] > top) top = x[i];
  for (i = 0; i < n; ++i) sum += (x[i] = expf(x[i] - top));
  for (i = 0; i < n; ++i) x[i] = (float)(x[i] / sum);
}

/* The logits of one image file: preprocessed as the model prescribes, then
 * run at the model's own size (pola_run's defaults: one image, logits). */
static pola_status classify(pola_model *model, const char *path, float *logits) {
  pola_image image = {0};
  pola_run_options run = pola_run_options_default();
  pola_run_output out = pola_run_output_default();
  const float *inputs[1];
  int c = 0, h = 0, w = 0;
  float *x;
  pola_status status = pola_model_input_shape(model, &c, &h, &w);
  if (status != POLA_OK) return status;
  x = malloc(sizeof(float) * (size_t)c * (size_t)h * (size_t)w);
  if (!x) return POLA_ERROR_INTERNAL;
  image.path = path;
  status = pola_model_preprocess_batch(model, &image, 1, x, NULL);
  if (status == POLA_OK) {
    inputs[0] = x;
    out.logits = logits;
    status = pola_run(model, &run, inputs, &out);
  }
  free(x);
  return status;
}

int main(int argc, char **argv) {
  pola_options options = pola_default_options();
  pola_model *model = NULL;
  pola_status status;
  const char *image;
  float *probs;
  int classes, top, rank, i;

  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL.pola IMAGE [TOP]   (polaformer %s)\n", argv[0], pola_version());
    return 1;
  }
  image = argv[2];
  top = argc == 4 ? atoi(argv[3]) : 5;

  status = pola_model_load(argv[1], &options, &model);
  if (status != POLA_OK) return fail(status);
  classes = pola_model_num_classes(model);
  probs = malloc(sizeof(float) * (size_t)classes);
  status = probs ? classify(model, image, probs) : POLA_ERROR_INTERNAL;
  if (status != POLA_OK) {
    free(probs);
    pola_model_free(model);
    return fail(status);
  }
  softmax(probs, classes);

  /* Selection of the best remaining class, TOP times: fine for a few. */
  if (top > classes) top = classes;
  for (rank = 0; rank < top; ++rank) {
    int best = -1;
    for (i = 0; i < classes; ++i)
      if (probs[i] >= 0 && (best < 0 || probs[i] > probs[best])) best = i;
    printf("%d\t%.6f\t%s\n", best, probs[best], pola_model_class_name(model, best));
    probs[best] = -1; /* taken */
  }
  free(probs);
  pola_model_free(model);
  return 0;
}
