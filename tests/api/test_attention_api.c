/* The attention core through the C API (pola_attention, pola_alloc_floats):
 * results against a double-precision oracle written here from the formula in
 * polaformer.h, strides and a key bias, the same bits for 1 and 2 threads,
 * empty sequences, and every argument check (out stays untouched).
 *
 *   test_attention_api */
#include <math.h>
#include <stdint.h>

#include "api_test_util.h"
#include "polaformer/polaformer.h"

/* Deterministic values in [lo, hi). */
static float uniform(uint32_t *state, float lo, float hi) {
  *state = *state * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(*state >> 8) / 16777216.0f;
}

static float *random_rows(uint32_t *state, long long rows, long long ld, float lo, float hi) {
  float *p = (float *)malloc((size_t)(rows * ld > 0 ? rows * ld : 1) * sizeof(float));
  long long i;
  for (i = 0; i < rows * ld; ++i) p[i] = uniform(state, lo, hi);
  return p;
}

/* relu(x)^p in double; 0 for x <= 0. */
static double relu_pow(double x, double p) { return x > 0 ? pow(x, p) : 0.0; }

/* The formula of polaformer.h, head by head, in double. */
static void oracle(const pola_attention_args *a, double *want /* n_q x heads*head_dim */) {
  const int d = a->head_dim, half = d / 2;
  const long long width = (long long)a->heads * d;
  const long long ld_q = a->ld_q ? a->ld_q : width, ld_k = a->ld_k ? a->ld_k : width,
                  ld_v = a->ld_v ? a->ld_v : width; /* 0: dense rows */
  double *kv = (double *)calloc((size_t)(2 * d * d), sizeof(double));
  double *kmean = (double *)calloc((size_t)(2 * d), sizeof(double));
  double *phi = (double *)malloc((size_t)(2 * d) * sizeof(double));
  int h, j, r, c;
  long long t;
  for (h = 0; h < a->heads; ++h) {
    const long long c0 = (long long)h * d;
    memset(kv, 0, (size_t)(2 * d * d) * sizeof(double));
    memset(kmean, 0, (size_t)(2 * d) * sizeof(double));
    for (t = 0; t < a->n_k; ++t) {
      for (j = 0; j < d; ++j) {
        double u = a->k[t * ld_k + c0 + j];
        if (a->key_bias) u += a->key_bias[t * width + c0 + j];
        u *= a->inv_scale[c0 + j];
        phi[j] = relu_pow(u, a->power[c0 + j]);
        phi[d + j] = relu_pow(-u, a->power[c0 + j]);
      }
      for (r = 0; r < 2 * d; ++r) {
        kmean[r] += phi[r] / (double)a->n_k;
        for (c = 0; c < d; ++c) kv[r * d + c] += phi[r] * a->v[t * ld_v + c0 + c] / (double)a->n_k;
      }
    }
    for (t = 0; t < a->n_q; ++t) {
      double den_sim = 0, den_opp = 0;
      for (j = 0; j < d; ++j) {
        const double u = (double)a->q[t * ld_q + c0 + j] * a->inv_scale[c0 + j];
        phi[j] = relu_pow(u, a->power[c0 + j]);
        phi[d + j] = relu_pow(-u, a->power[c0 + j]);
      }
      for (r = 0; r < 2 * d; ++r) {
        den_sim += phi[r] * kmean[r];
        den_opp += phi[(r + d) % (2 * d)] * kmean[r]; /* q_opp: halves swapped */
      }
      for (c = 0; c < d; ++c) {
        double acc = 0;
        for (r = 0; r < 2 * d; ++r) acc += (c < half ? phi[r] : phi[(r + d) % (2 * d)]) * kv[r * d + c];
        want[t * width + c0 + c] = acc / ((c < half ? den_sim : den_opp) + 1e-6);
      }
    }
  }
  free(kv);
  free(kmean);
  free(phi);
}

/* max |got - want| over the n_q rows, relative to max |want|. */
static double relative_error(const pola_attention_args *a, const double *want) {
  const long long width = (long long)a->heads * a->head_dim, ld_out = a->ld_out ? a->ld_out : width;
  double err = 0, scale = 1e-30;
  long long t, c;
  for (t = 0; t < a->n_q; ++t)
    for (c = 0; c < width; ++c) {
      const double diff = fabs(a->out[t * ld_out + c] - want[t * width + c]);
      if (diff > err) err = diff;
      if (fabs(want[t * width + c]) > scale) scale = fabs(want[t * width + c]);
    }
  return err / scale;
}

typedef struct {
  pola_attention_args args;
  float *q, *k, *v, *bias, *inv_scale, *power, *out;
} problem;

/* A random problem; strides pad every row by a few floats. */
static problem make_problem(long long n_q, long long n_k, int heads, int head_dim, int pad, int with_bias) {
  problem p;
  uint32_t state = 12345u + (uint32_t)(n_q * 7 + n_k * 3 + head_dim);
  const long long width = (long long)heads * head_dim;
  p.args = pola_default_attention_args();
  p.args.n_q = n_q;
  p.args.n_k = n_k;
  p.args.heads = heads;
  p.args.head_dim = head_dim;
  p.args.ld_q = width + pad;
  p.args.ld_k = width + 2 * pad;
  p.args.ld_v = width + 3 * pad;
  p.args.ld_out = width + pad;
  p.q = random_rows(&state, n_q, p.args.ld_q, -1.5f, 1.5f);
  p.k = random_rows(&state, n_k, p.args.ld_k, -1.5f, 1.5f);
  p.v = random_rows(&state, n_k, p.args.ld_v, -1.0f, 1.0f);
  p.bias = with_bias ? random_rows(&state, n_k, width, -0.3f, 0.3f) : NULL;
  p.inv_scale = random_rows(&state, 1, width, 0.5f, 2.0f);
  p.power = random_rows(&state, 1, width, 1.0f, 5.0f);
  p.out = random_rows(&state, n_q, p.args.ld_out, 0.0f, 1.0f);
  p.args.q = p.q;
  p.args.k = p.k;
  p.args.v = p.v;
  p.args.key_bias = p.bias;
  p.args.inv_scale = p.inv_scale;
  p.args.power = p.power;
  p.args.out = p.out;
  return p;
}

static void free_problem(problem *p) {
  free(p->q);
  free(p->k);
  free(p->v);
  free(p->bias);
  free(p->inv_scale);
  free(p->power);
  free(p->out);
}

static void test_matches_oracle(void) {
  /* head_dim 24: neither a multiple of 16 nor of 8 per half; 300 key tokens
   * span several blocks; padded strides and a key bias. */
  problem p = make_problem(45, 300, 3, 24, 5, 1);
  double *want = (double *)malloc((size_t)(45 * 72) * sizeof(double));
  double err;
  p.args.threads = 2;
  oracle(&p.args, want);
  CHECK(pola_attention(&p.args) == POLA_OK);
  err = relative_error(&p.args, want);
  if (err > 1e-5) fprintf(stderr, "attention vs oracle: relative error %.3g\n", err);
  CHECK(err <= 1e-5);
  free(want);
  free_problem(&p);
}

/* Dense rows in pola_alloc_floats arrays; the result must not depend on the
 * thread count, bit for bit. */
static void test_large_arrays_and_threads(void) {
  const long long n = 3000;
  const int heads = 2, d = 64;
  const long long width = (long long)heads * d;
  float *q = pola_alloc_floats((size_t)(n * width)), *k = pola_alloc_floats((size_t)(n * width)),
        *v = pola_alloc_floats((size_t)(n * width)), *out1 = pola_alloc_floats((size_t)(n * width)),
        *out2 = pola_alloc_floats((size_t)(n * width));
  problem shape = make_problem(1, 1, heads, d, 0, 0); /* for inv_scale and power */
  uint32_t state = 99u;
  double *want = (double *)malloc((size_t)(n * width) * sizeof(double));
  pola_attention_args a = pola_default_attention_args();
  long long i;
  CHECK(q && k && v && out1 && out2);
  CHECK(((uintptr_t)q & ((2u << 20) - 1)) == 0);
  for (i = 0; i < n * width; ++i) {
    q[i] = uniform(&state, -1.5f, 1.5f);
    k[i] = uniform(&state, -1.5f, 1.5f);
    v[i] = uniform(&state, -1.0f, 1.0f);
  }
  a.n_q = a.n_k = n;
  a.heads = heads;
  a.head_dim = d;
  a.q = q;
  a.k = k;
  a.v = v;
  a.inv_scale = shape.inv_scale;
  a.power = shape.power;
  a.out = out1;
  a.threads = 1;
  CHECK(pola_attention(&a) == POLA_OK);
  a.out = out2;
  a.threads = 2;
  CHECK(pola_attention(&a) == POLA_OK);
  CHECK(memcmp(out1, out2, (size_t)(n * width) * sizeof(float)) == 0);
  oracle(&a, want);
  CHECK(relative_error(&a, want) <= 1e-5);
  a.out = out1;
  CHECK(relative_error(&a, want) <= 1e-5);
  pola_free_floats(q);
  pola_free_floats(k);
  pola_free_floats(v);
  pola_free_floats(out1);
  pola_free_floats(out2);
  free(want);
  free_problem(&shape);
}

static void test_empty_sequences(void) {
  problem p = make_problem(4, 0, 2, 8, 0, 0);
  long long i;
  /* No keys: the state is zero, so every output is 0 / (0 + 1e-6) = 0. */
  p.args.k = p.args.v = NULL;
  CHECK(pola_attention(&p.args) == POLA_OK);
  for (i = 0; i < 4 * 16; ++i) CHECK(p.out[i] == 0.0f);
  /* No queries: nothing to write, q and out may be NULL. */
  free_problem(&p);
  p = make_problem(1, 5, 2, 8, 0, 0);
  p.args.n_q = 0;
  p.args.q = NULL;
  p.args.out = NULL;
  CHECK(pola_attention(&p.args) == POLA_OK);
  free_problem(&p);
}

/* Runs `a`, expects POLA_ERROR_INPUT with `needle` in the message and out
 * untouched. */
static void expect_input_error(const pola_attention_args *a, const float *out, const float *before, size_t floats,
                               const char *needle, int line) {
  const pola_status st = pola_attention(a);
  if (st != POLA_ERROR_INPUT || !strstr(pola_last_error(), needle)) {
    fprintf(stderr, "%s:%d: expected an input error naming '%s', got status %d: %s\n", __FILE__, line, needle,
            (int)st, pola_last_error());
    ++g_failures;
  }
  if (out && memcmp(out, before, floats * sizeof(float)) != 0) {
    fprintf(stderr, "%s:%d: out was written by a call that failed\n", __FILE__, line);
    ++g_failures;
  }
}

static void test_argument_checks(void) {
  problem p = make_problem(6, 9, 2, 8, 1, 0);
  const size_t out_floats = (size_t)(6 * p.args.ld_out);
  float *before = (float *)malloc(out_floats * sizeof(float));
  pola_attention_args a;
  memcpy(before, p.out, out_floats * sizeof(float));
#define EXPECT_INPUT_ERROR(needle) expect_input_error(&a, p.out, before, out_floats, needle, __LINE__)
  CHECK(pola_attention(NULL) == POLA_ERROR_INPUT);
  CHECK(strstr(pola_last_error(), "args") != NULL);
  a = p.args; a.heads = 0;                EXPECT_INPUT_ERROR("heads");
  a = p.args; a.head_dim = 0;             EXPECT_INPUT_ERROR("head_dim");
  a = p.args; a.head_dim = 1025;          EXPECT_INPUT_ERROR("head_dim");
  a = p.args; a.n_q = -1;                 EXPECT_INPUT_ERROR("n_q");
  a = p.args; a.threads = -2;             EXPECT_INPUT_ERROR("threads");
  a = p.args; a.q = NULL;                 EXPECT_INPUT_ERROR("q must not be NULL");
  a = p.args; a.v = NULL;                 EXPECT_INPUT_ERROR("v must not be NULL");
  a = p.args; a.out = NULL;               EXPECT_INPUT_ERROR("out must not be NULL");
  a = p.args; a.inv_scale = NULL;         EXPECT_INPUT_ERROR("inv_scale");
  a = p.args; a.ld_k = 15;                EXPECT_INPUT_ERROR("ld_k = 15");
  a = p.args; a.ld_q = 1LL << 62;         EXPECT_INPUT_ERROR("do not fit");
  a = p.args; a.out = p.q;                EXPECT_INPUT_ERROR("overlaps");
  a = p.args; a.k = p.out + 3;            EXPECT_INPUT_ERROR("overlaps");
  p.power[5] = 0.0f;
  a = p.args;                             EXPECT_INPUT_ERROR("power[5]");
  p.power[5] = NAN;                       EXPECT_INPUT_ERROR("power[5]");
  p.power[5] = 2.0f;
  p.inv_scale[7] = INFINITY;              EXPECT_INPUT_ERROR("inv_scale[7]");
  p.inv_scale[7] = 1.0f;
#undef EXPECT_INPUT_ERROR
  CHECK(pola_attention(&p.args) == POLA_OK); /* the same problem, repaired */
  free(before);
  free_problem(&p);
}

static void test_alloc_floats(void) {
  float *p = pola_alloc_floats(1000);
  CHECK(p != NULL);
  CHECK(((uintptr_t)p & ((2u << 20) - 1)) == 0);
  if (p) {
    p[0] = 1.0f;
    p[999] = 2.0f;
    CHECK(p[0] + p[999] == 3.0f);
  }
  pola_free_floats(p);
  pola_free_floats(NULL); /* allowed */
  CHECK(pola_alloc_floats(0) == NULL);
  CHECK(strstr(pola_last_error(), "count") != NULL);
  CHECK(pola_alloc_floats((size_t)-1) == NULL);
  CHECK(strstr(pola_last_error(), "out of memory") != NULL);
}

int main(void) {
  test_matches_oracle();
  test_large_arrays_and_threads();
  test_empty_sequences();
  test_argument_checks();
  test_alloc_floats();
  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  else printf("attention API: all checks passed\n");
  return g_failures ? 1 : 0;
}
