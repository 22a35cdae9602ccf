/* Helpers shared by the C tests of the public API: a failure counter that
 * reports file:line, and reading a raw float32 fixture file. Plain C99. */
#ifndef POLA_API_TEST_UTIL_H
#define POLA_API_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif
