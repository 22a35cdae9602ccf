/* The ABI contract of the public header: the library reports the
 * POLA_ABI_VERSION this header was compiled with; messages say what is wrong
 * without naming a C function (pola_last_error_function names it); and the
 * struct_size of pola_run_options / pola_run_output lets a program built
 * with an older, shorter struct keep working while a newer struct's unknown
 * fields are refused rather than ignored.
 *
 *   test_abi MODELS_DIR */
#include <stddef.h>

#include "api_test_util.h"

/* What a message must not look like: "pola_something: ...". */
static int names_no_function(const char *message) { return strncmp(message, "pola_", 5) != 0; }

int main(int argc, char **argv) {
  pola_model *m = NULL;
  int c = 0, h = 0, w = 0, classes;
  float *x, *want, *got;
  const float *inputs[1];
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODELS_DIR\n", argv[0]);
    return 2;
  }
  CHECK(pola_abi_version() == POLA_ABI_VERSION);
  printf("ABI: header %d, library %d\n", POLA_ABI_VERSION, pola_abi_version());

  CHECK(pola_last_error_function()[0] == '\0'); /* no failure yet on this thread */
  CHECK(pola_model_load(fixture_path(argv[1], "no_such_model.pola"), NULL, &m) == POLA_ERROR_INPUT);
  CHECK(strcmp(pola_last_error_function(), "pola_model_load") == 0);
  CHECK(strstr(pola_last_error(), "no_such_model.pola") != NULL && names_no_function(pola_last_error()));

  if (pola_model_load(fixture_path(argv[1], "fashion_pola_pvt.pola"), NULL, &m) != POLA_OK) {
    fprintf(stderr, "%s\n", pola_last_error());
    return 2;
  }
  CHECK(pola_model_input_shape(m, &c, &h, &w) == POLA_OK);
  classes = pola_model_num_classes(m);
  x = calloc((size_t)c * h * w, sizeof(float));
  want = calloc((size_t)classes, sizeof(float));
  got = calloc((size_t)classes, sizeof(float));
  inputs[0] = x;
  CHECK(t_run(m, x, 1, want) == POLA_OK);

  /* Messages: the problem, not the function; the function on the side. */
  CHECK(pola_model_check_size(m, h + 1, w) == POLA_ERROR_INPUT);
  CHECK(strncmp(pola_last_error(), "input size ", 11) == 0);
  CHECK(strcmp(pola_last_error_function(), "pola_model_check_size") == 0);
  CHECK(t_run(m, x, 0, got) == POLA_ERROR_INPUT);
  CHECK(strncmp(pola_last_error(), "batch must be", 13) == 0);
  CHECK(strcmp(pola_last_error_function(), "pola_run") == 0);
  CHECK(pola_top_k(NULL, 3, 1, NULL, NULL) == POLA_ERROR_INPUT && names_no_function(pola_last_error()));
  CHECK(pola_attention(NULL) == POLA_ERROR_INPUT && names_no_function(pola_last_error()));
  CHECK(strcmp(pola_last_error_function(), "pola_attention") == 0);

  {
    /* An older caller: options that end before `outputs` (logits by default). */
    pola_run_options old = pola_run_options_default();
    pola_run_output out = pola_run_output_default();
    out.logits = got;
    old.struct_size = offsetof(pola_run_options, outputs);
    old.outputs = 0; /* beyond its struct_size: not read */
    CHECK(pola_run(m, &old, inputs, &out) == POLA_OK && memcmp(got, want, sizeof(float) * classes) == 0);
  }
  {
    /* A newer caller: a longer struct whose extra field is set is refused; zero is fine. */
    struct {
      pola_run_options known;
      int later_field;
    } newer;
    pola_run_output out = pola_run_output_default();
    out.logits = got;
    memset(&newer, 0, sizeof newer);
    newer.known = pola_run_options_default();
    newer.known.struct_size = sizeof newer;
    CHECK(pola_run(m, &newer.known, inputs, &out) == POLA_OK);
    newer.later_field = 1;
    CHECK(pola_run(m, &newer.known, inputs, &out) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "newer") != NULL);
  }
  {
    /* A struct never initialised by its default: refused, not read as garbage. */
    pola_run_options bare;
    pola_run_output out = pola_run_output_default();
    memset(&bare, 0, sizeof bare);
    out.logits = got;
    CHECK(pola_run(m, &bare, inputs, &out) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "struct_size") != NULL);
  }
  {
    /* Outputs asked for must have somewhere to go. */
    pola_run_options o = pola_run_options_default();
    pola_run_output out = pola_run_output_default();
    o.outputs = POLA_OUTPUT_LOGITS | POLA_OUTPUT_POOLED;
    out.logits = got;
    CHECK(pola_run(m, &o, inputs, &out) == POLA_ERROR_INPUT);
    CHECK(strstr(pola_last_error(), "outputs[0].pooled") != NULL);
  }

  free(x);
  free(want);
  free(got);
  pola_model_free(m);
  if (g_failures) fprintf(stderr, "%d checks failed\n", g_failures);
  else printf("ABI and messages: OK\n");
  return g_failures ? 1 : 0;
}
