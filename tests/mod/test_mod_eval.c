/*
 * test_mod_eval.c - the CPU evaluator and the forward-mode derivative. The derivative of every
 * shipped mod, of the test mods (branches, casts, integer sub-expressions, every dtype) and of
 * every math builtin on its own (both spellings) is checked against central finite differences in
 * float64 over random inputs; d/d aux[i] likewise for float aux tensors. The int semantics the
 * kernel shares (wrap-around, x/0, shifts, saturating casts, clamped aux reads) are pinned down.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "mod_test_util.h"

#define NUMEL 1024

static double eval_s(const fa4__mod *m, double s, int b, int h, int q, int kv,
                     const fa4_aux_value *aux, double *d)
{
    double v = 0, dd = 0;
    fa4__diag diag;
    fa4_status st = fa4__mod_eval_score(m, s, b, h, q, kv, aux, fa4__mod_num_aux(m), &v, &dd,
                                        &diag);
    if (st != FA4_OK)
        fprintf(stderr, "eval: %s\n", diag.message);
    assert_int_equal(st, FA4_OK);
    if (d)
        *d = dd;
    return v;
}

/* Central difference at s; 1 when it agrees with d, 0 when it does not, -1 when the function is
 * not smooth there (two step sizes disagree: a jump of floor, a branch switching). */
static int fd_agrees(const fa4__mod *m, double s, int b, int h, int q, int kv,
                     const fa4_aux_value *aux, double d)
{
    double eps = 1e-6 * fmax(1.0, fabs(s));
    double fd1 = (eval_s(m, s + eps, b, h, q, kv, aux, NULL) -
                  eval_s(m, s - eps, b, h, q, kv, aux, NULL)) / (2 * eps);
    double fd2 = (eval_s(m, s + eps / 8, b, h, q, kv, aux, NULL) -
                  eval_s(m, s - eps / 8, b, h, q, kv, aux, NULL)) / (eps / 4);
    double tol = 1e-5 * fmax(1.0, fabs(d));
    if (fabs(fd1 - d) <= tol)
        return 1;
    if (fabs(fd1 - fd2) > tol || !isfinite(fd1))
        return -1;
    return 0;
}

static int check_derivative_z(const char *name, const fa4__mod *m, uint64_t seed, int points,
                              int zero_ok);

/* Derivative check of one mod over `points` random inputs; returns failures. */
static int check_derivative_z(const char *name, const fa4__mod *m, uint64_t seed, int points,
                              int zero_ok)
{
    fa4_aux_value aux[FA4__MOD_MAX_AUX];
    int fails = 0, rough = 0, nonzero = 0;
    for (int p = 0; p < points; p++) {
        if (p % 50 == 0) {
            if (p)
                mt_free_aux(aux, fa4__mod_num_aux(m));
            mt_make_aux(m, &seed, NUMEL, aux);
        }
        double s = mt_uniform(&seed, -8, 8);
        int b = (int)(mt_next(&seed) % 4), h = (int)(mt_next(&seed) % 8);
        int q = (int)(mt_next(&seed) % 64), kv = (int)(mt_next(&seed) % 64);
        double d;
        double v = eval_s(m, s, b, h, q, kv, aux, &d);
        if (!isfinite(v) || !isfinite(d))
            continue;
        nonzero += d != 0;
        int r = fd_agrees(m, s, b, h, q, kv, aux, d);
        if (r == 0) {
            fails++;
            if (fails < 5)
                fprintf(stderr, "%s: s=%.17g b=%d h=%d q=%d kv=%d: value %.17g d %.17g\n", name,
                        s, b, h, q, kv, v, d);
        }
        rough += r < 0;
    }
    mt_free_aux(aux, fa4__mod_num_aux(m));
    /* only a few inputs may sit on a discontinuity */
    if (rough > points / 100) {
        fprintf(stderr, "%s: %d of %d points not smooth\n", name, rough, points);
        fails++;
    }
    if (fa4__mod_has_score(m) && nonzero == 0 && !zero_ok) {
        fprintf(stderr, "%s: derivative is never nonzero\n", name);
        fails++;
    }
    if (zero_ok && nonzero) {
        fprintf(stderr, "%s: derivative should be 0 everywhere\n", name);
        fails++;
    }
    return fails;
}

static int check_derivative(const char *name, const fa4__mod *m, uint64_t seed, int points)
{
    return check_derivative_z(name, m, seed, points, 0);
}

static void derivative_shipped_mods(void **state)
{
    (void)state;
    char *names[MT_MAX_MODS];
    int n = mt_list_mods(names);
    assert_true(n >= 14);
    int fails = 0, with_score = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        char *src = mt_read_mod(names[i], &len);
        fa4__mod *m = mt_parse(src, len, names[i]);
        assert_non_null(m);
        with_score += fa4__mod_has_score(m);
        fails += check_derivative(names[i], m, 1000 + (uint64_t)i, 2000);
        fa4__mod_free(m);
        free(src);
        free(names[i]);
    }
    assert_true(with_score >= 6);
    assert_int_equal(fails, 0);
}

/* With FA4_MOD_DUMP_DIR set: write <case>.expect.json, the CPU evaluator's values at random points
 * with the aux bytes used, for tests/mod/gpu/run_emitted.py to compare the emitted CUDA against. */
static void dump_expectations(const char *dir, const char *name, const fa4__mod *m, uint64_t seed)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.expect.json", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fa4_aux_value aux[FA4__MOD_MAX_AUX];
    int n = fa4__mod_num_aux(m);
    mt_make_aux(m, &seed, 64, aux);
    fprintf(f, "{\"aux\": [");
    for (int i = 0; i < n; i++) {
        const fa4__aux_decl *a = fa4__mod_aux(m, i);
        fprintf(f, "%s{\"name\": \"%s\", \"tensor\": %d, \"dtype\": %d, \"f\": %.17g, \"i\": %lld, "
                   "\"hex\": \"", i ? ", " : "", a->name, a->is_tensor, (int)a->dtype,
                (double)(float)aux[i].f, (long long)aux[i].i);
        size_t es = a->dtype == FA4_DTYPE_FP32 || a->dtype == FA4_DTYPE_INT32 ? 4
                  : a->dtype == FA4_DTYPE_INT64 ? 8
                  : a->dtype == FA4_DTYPE_BF16 || a->dtype == FA4_DTYPE_FP16 ||
                            a->dtype == FA4_DTYPE_INT16 ? 2 : 1;
        for (int64_t k = 0; a->is_tensor && k < aux[i].numel * (int64_t)es; k++)
            fprintf(f, "%02x", ((const unsigned char *)aux[i].data)[k]);
        fprintf(f, "\"}");
    }
    fprintf(f, "],\n \"points\": [");
    for (int p = 0; p < 2048; p++) {
        double sc = (double)(float)mt_uniform(&seed, -8, 8);
        int b = (int)(mt_next(&seed) % 4), h = (int)(mt_next(&seed) % 8);
        int q = (int)(mt_next(&seed) % 64), kv = (int)(mt_next(&seed) % 64);
        double v, d;
        int ok;
        fa4__diag dg;
        assert_int_equal(fa4__mod_eval_score(m, sc, b, h, q, kv, aux, n, &v, &d, &dg), FA4_OK);
        assert_int_equal(fa4__mod_eval_mask(m, b, h, q, kv, aux, n, &ok, &dg), FA4_OK);
        fprintf(f, "%s\n  [%.9g, %d, %d, %d, %d, %.17g, %.17g, %d]", p ? "," : "", sc, b, h, q, kv,
                v, d, ok);
    }
    fprintf(f, "]}\n");
    fclose(f);
    mt_free_aux(aux, n);
}

static void derivative_test_cases(void **state)
{
    (void)state;
    static const char *const cases[] = {"branches", "dtypes", "builtins", "tiles"};
    int fails = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/mod/cases/%s.mod", FA4_TEST_SOURCE_DIR, cases[i]);
        size_t len;
        char *src = mt_read_file(path, &len);
        assert_non_null(src);
        fa4__mod *m = mt_parse(src, len, cases[i]);
        assert_non_null(m);
        fails += check_derivative(cases[i], m, 77 + i, 4000);
        const char *dump = getenv("FA4_MOD_DUMP_DIR");
        if (dump && dump[0])
            dump_expectations(dump, cases[i], m, 500 + i);
        fa4__mod_free(m);
        free(src);
    }
    assert_int_equal(fails, 0);
}

/* Each builtin alone, both spellings, with arguments that depend on the score. */
static void derivative_each_builtin(void **state)
{
    (void)state;
    static const struct {
        const char *names[2];
        const char *args;
    } bis[] = {
        {{"expf", "exp"}, "x"}, {{"exp2f", "exp2"}, "x"}, {{"logf", "log"}, "p"},
        {{"log2f", "log2"}, "p"}, {{"log1pf", "log1p"}, "p"}, {{"expm1f", "expm1"}, "x"},
        {{"sqrtf", "sqrt"}, "p"}, {{"rsqrtf", "rsqrt"}, "p"}, {{"tanhf", "tanh"}, "x"},
        {{"sinf", "sin"}, "x"}, {{"cosf", "cos"}, "x"}, {{"fabsf", "fabs"}, "x"},
        {{"fminf", "fmin"}, "x, y"}, {{"fmaxf", "fmax"}, "x, y"}, {{"floorf", "floor"}, "x"},
        {{"ceilf", "ceil"}, "x"}, {{"roundf", "round"}, "x"}, {{"truncf", "trunc"}, "x"},
        {{"powf", "pow"}, "p, y"}, {{"fmodf", "fmod"}, "x, p"},
        {{"copysignf", "copysign"}, "x, y"}, {{"erff", "erf"}, "x"},
        {{"abs", "abs"}, "x"}, {{"min", "min"}, "x, y"}, {{"max", "max"}, "x, y"},
        {{"clamp", "clamp"}, "x, -p, p"},
    };
    int fails = 0;
    for (size_t i = 0; i < sizeof bis / sizeof bis[0]; i++) {
        for (int sp = 0; sp < 2; sp++) {
            char src[512];
            /* x spans signs, p > 0, y depends on the score differently than x */
            snprintf(src, sizeof src,
                     "float score_mod(float s, int b, int h, int q, int kv) {\n"
                     "  float x = 0.7f * s - 0.3f;\n"
                     "  float p = 1.2f + 0.5f * s * s / (1.0f + s * s);\n"
                     "  float y = 0.5f * s + 0.25f;\n"
                     "  return %s(%s);\n}\n", bis[i].names[sp], bis[i].args);
            fa4__mod *m = mt_parse(src, strlen(src), bis[i].names[sp]);
            assert_non_null(m);
            /* floor/ceil/round/trunc: the derivative is 0 everywhere */
            int zero = strstr(bis[i].names[0], "floor") || strstr(bis[i].names[0], "ceil") ||
                       strstr(bis[i].names[0], "round") || strstr(bis[i].names[0], "trunc");
            fails += check_derivative_z(bis[i].names[sp], m, 5 + i, 500, zero);
            fa4__mod_free(m);
        }
    }
    assert_int_equal(fails, 0);
}

/* d score_mod / d aux[j] against finite differences on fp32 tables (linear and nonlinear uses). */
static void derivative_aux(void **state)
{
    (void)state;
    static const char *const mods[] = {"alibi", "rel_bias", "t5_bias"};
    static const char nonlin[] =
        "float score_mod(float s, int b, int h, int q, int kv, const float *w) {\n"
        "  float a = w[q % 8];\n  return tanhf(a * s) + a * a * w[h];\n}\n";
    uint64_t seed = 99;
    int fails = 0, checked = 0;
    for (int k = 0; k < 4; k++) {
        size_t len = sizeof nonlin - 1;
        char *src = k < 3 ? mt_read_mod(mods[k], &len) : strdup(nonlin);
        fa4__mod *m = mt_parse(src, len, k < 3 ? mods[k] : "nonlin");
        assert_non_null(m);
        fa4_aux_value aux[FA4__MOD_MAX_AUX];
        mt_make_aux(m, &seed, 256, aux);
        int ti = -1;
        for (int i = 0; i < fa4__mod_num_aux(m); i++)
            if (fa4__mod_aux(m, i)->is_tensor)
                ti = i;
        assert_true(ti >= 0);
        float *tab = (float *)aux[ti].data;
        for (int p = 0; p < 40; p++) {
            double s = mt_uniform(&seed, -4, 4);
            int b = (int)(mt_next(&seed) % 4), h = (int)(mt_next(&seed) % 8);
            int q = (int)(mt_next(&seed) % 64), kv = (int)(mt_next(&seed) % 64);
            for (int j = 0; j < 256; j++) {
                double d;
                fa4__diag dg;
                assert_int_equal(fa4__mod_eval_score_daux(m, s, b, h, q, kv, aux,
                                                          fa4__mod_num_aux(m), ti, j, &d, &dg),
                                 FA4_OK);
                if (d == 0 && (j % 37) != 0)
                    continue; /* check every read element and a sample of the others */
                const float e = 1.0f / 1024;
                float keep = tab[j];
                tab[j] = keep + e;
                double up = eval_s(m, s, b, h, q, kv, aux, NULL);
                tab[j] = keep - e;
                double dn = eval_s(m, s, b, h, q, kv, aux, NULL);
                tab[j] = keep;
                double fd = (up - dn) / (2.0 * e);
                checked++;
                if (fabs(fd - d) > 2e-4 * fmax(1.0, fabs(d))) {
                    fails++;
                    fprintf(stderr, "daux mod %d elem %d: fd %.10g deriv %.10g\n", k, j, fd, d);
                }
            }
        }
        mt_free_aux(aux, fa4__mod_num_aux(m));
        fa4__mod_free(m);
        free(src);
    }
    assert_true(checked > 100);
    assert_int_equal(fails, 0);
}

/* ------------------------------------------------------------------------- exact semantics */
static fa4__mod *inline_mod(const char *src)
{
    fa4__mod *m = mt_parse(src, strlen(src), "inline");
    assert_non_null(m);
    return m;
}

static double value_of(const char *expr_src, int q, int kv)
{
    char src[1024];
    snprintf(src, sizeof src,
             "float score_mod(float s, int b, int h, int q, int kv) { return (float)(%s); }",
             expr_src);
    fa4__mod *m = inline_mod(src);
    double v = eval_s(m, 0.0, 0, 0, q, kv, NULL, NULL);
    fa4__mod_free(m);
    return v;
}

static void int_semantics(void **state)
{
    (void)state;
    assert_true(value_of("q + 2147483647", 1, 0) == -2147483648.0);
    assert_true(value_of("q - 2147483647 - 2", 0, 0) == 2147483647.0);
    assert_true(value_of("q * 65536 * 65536", 3, 0) == 0.0);
    assert_true(value_of("q / kv", 7, 0) == 0.0);
    assert_true(value_of("q % kv", 7, 0) == 0.0);
    assert_true(value_of("(q - 2147483647 - 1) / kv", 0, -1) == -2147483648.0);
    assert_true(value_of("(q - 2147483647 - 1) % kv", 0, -1) == 0.0);
    assert_true(value_of("q / kv", -7, 2) == -3.0);
    assert_true(value_of("q % kv", -7, 2) == -1.0);
    assert_true(value_of("1 << q", 33, 0) == 2.0);
    assert_true(value_of("q >> 1", -8, 0) == -4.0);
    assert_true(value_of("q >> kv", -1, 40) == -1.0);
    assert_true(value_of("q >> kv", 1024, 40) == 4.0);
    assert_true(value_of("~q", 0, 0) == -1.0);
    assert_true(value_of("(q & 12) | (kv ^ 3)", 13, 1) == 14.0);
    assert_true(value_of("-q", -2147483647 - 1, 0) == -2147483648.0);
    assert_true(value_of("abs(q)", -2147483647 - 1, 0) == -2147483648.0);
    assert_true(value_of("(int)1e10f", 0, 0) == 2147483647.0);
    assert_true(value_of("(int)-1e10f", 0, 0) == -2147483648.0);
    assert_true(value_of("(int)NAN", 0, 0) == 0.0);
    assert_true(value_of("(int)-2.7f", 0, 0) == -2.0);
    assert_true(value_of("0xffffffff", 0, 0) == -1.0);
    assert_true(value_of("0", 0, 0) == 0.0 && value_of("0.5f * 4", 0, 0) == 2.0);
    assert_true(value_of("00.25 * 4.0", 0, 0) == 1.0 && value_of("1. + .5 + 1e1 + 2E-1f", 0, 0) == 11.5 + (double)0.2f);
    assert_true(value_of("(bool)q ? 1 : 2", 5, 0) == 1.0);
    assert_true(value_of("(int)(q > kv) + (int)(bool)0.5f", 5, 0) == 2.0);
    assert_true(value_of("min(q, kv) + max(q, kv) * 10 + clamp(q, 0, 3) * 100", 5, -2) ==
                -2 + 50 + 300);
    assert_true(value_of("q / 2 * 2.5f", 5, 0) == 5.0);
    assert_true(value_of("1.1", 0, 0) == (double)1.1f); /* a double literal is read as float */
    assert_true(isinf(value_of("-INFINITY", 0, 0)) && value_of("-INFINITY", 0, 0) < 0);
}

static void logic_is_lazy(void **state)
{
    (void)state;
    /* the right side of && / || and the untaken ?: branch are not evaluated (derivative stays
     * that of the branch taken) */
    fa4__mod *m = inline_mod(
        "float score_mod(float s, int b, int h, int q, int kv) {\n"
        "  return q > kv ? s * s : (kv > 100 || s > 0.0f ? 3.0f * s : -s);\n}\n");
    double d;
    assert_true(eval_s(m, 2.0, 0, 0, 5, 1, NULL, &d) == 4.0);
    assert_true(d == 4.0);
    assert_true(eval_s(m, 2.0, 0, 0, 1, 5, NULL, &d) == 6.0);
    assert_true(d == 3.0);
    assert_true(eval_s(m, -2.0, 0, 0, 1, 5, NULL, &d) == 2.0);
    assert_true(d == -1.0);
    fa4__mod_free(m);
}

static void aux_reads(void **state)
{
    (void)state;
    fa4__mod *m = inline_mod(
        "float score_mod(float s, int b, int h, int q, int kv, const float *t, const bf16 *u,\n"
        "                const half *v, const int64 *w, const int8 *x, const bool *y) {\n"
        "  return t[q] + u[q] + v[q] + (float)w[q] + (float)x[q] + (y[q] ? 1000.0f : 0.0f);\n"
        "}\n");
    float t[4] = {1, 2, 3, 4};
    uint16_t u[4] = {0x3f80, 0x4000, 0xbf80, 0x4040};   /* bf16: 1, 2, -1, 3 */
    uint16_t v[4] = {0x3c00, 0x4000, 0xbc00, 0x3800};   /* half: 1, 2, -1, 0.5 */
    int64_t w[4] = {5, 6, 0x100000007ll, -1};          /* keeps the low 32 bits */
    int8_t x[4] = {-1, -2, -3, -4};
    uint8_t y[4] = {0, 1, 0, 0};
    fa4_aux_value aux[6] = {
        {"t", FA4_DTYPE_FP32, t, 4, NULL, 0, 0}, {"u", FA4_DTYPE_BF16, u, 4, NULL, 0, 0},
        {"v", FA4_DTYPE_FP16, v, 4, NULL, 0, 0}, {"w", FA4_DTYPE_INT64, w, 4, NULL, 0, 0},
        {"x", FA4_DTYPE_INT8, x, 4, NULL, 0, 0}, {"y", FA4_DTYPE_BOOL, y, 4, NULL, 0, 0},
    };
    assert_true(eval_s(m, 0, 0, 0, 0, 0, aux, NULL) == 1 + 1 + 1 + 5 - 1);
    assert_true(eval_s(m, 0, 0, 0, 1, 0, aux, NULL) == 2 + 2 + 2 + 6 - 2 + 1000);
    assert_true(eval_s(m, 0, 0, 0, 2, 0, aux, NULL) == 3 - 1 - 1 + 7 - 3);
    /* out of range clamps to the ends */
    assert_true(eval_s(m, 0, 0, 0, -5, 0, aux, NULL) == 1 + 1 + 1 + 5 - 1);
    assert_true(eval_s(m, 0, 0, 0, 99, 0, aux, NULL) == 4 + 3 + 0.5 - 1 - 4);
    /* an empty tensor reads 0 */
    aux[0].numel = 0;
    assert_true(eval_s(m, 0, 0, 0, 0, 0, aux, NULL) == 0 + 1 + 1 + 5 - 1);
    aux[0].numel = 4;
    /* mismatches are FA4_ERR_AUX */
    double val;
    fa4__diag d;
    assert_int_equal(fa4__mod_eval_score(m, 0, 0, 0, 0, 0, aux, 5, &val, NULL, &d), FA4_ERR_AUX);
    aux[2].dtype = FA4_DTYPE_BF16;
    assert_int_equal(fa4__mod_eval_score(m, 0, 0, 0, 0, 0, aux, 6, &val, NULL, &d), FA4_ERR_AUX);
    aux[2].dtype = FA4_DTYPE_FP16;
    aux[1].name = "z";
    assert_int_equal(fa4__mod_eval_score(m, 0, 0, 0, 0, 0, aux, 6, &val, NULL, &d), FA4_ERR_AUX);
    assert_non_null(strstr(d.message, "'u'"));
    aux[1].name = NULL; /* positional is fine */
    assert_int_equal(fa4__mod_eval_score(m, 0, 0, 0, 0, 0, aux, 6, &val, NULL, &d), FA4_OK);
    fa4__mod_free(m);
}

static int mask_of(const char *name, int q, int kv, const fa4_aux_value *aux, int naux)
{
    size_t len;
    char *src = mt_read_mod(name, &len);
    fa4__mod *m = mt_parse(src, len, name);
    assert_non_null(m);
    int ok = -1;
    fa4__diag d;
    assert_int_equal(fa4__mod_eval_mask(m, 0, 0, q, kv, aux, naux, &ok, &d), FA4_OK);
    fa4__mod_free(m);
    free(src);
    return ok;
}

static void shipped_mask_values(void **state)
{
    (void)state;
    fa4_aux_value win = {"window", FA4_DTYPE_INT32, NULL, 0, NULL, 0, 4};
    assert_int_equal(mask_of("causal", 3, 3, NULL, 0), 1);
    assert_int_equal(mask_of("causal", 3, 4, NULL, 0), 0);
    assert_int_equal(mask_of("sliding_window", 10, 14, &win, 1), 1);
    assert_int_equal(mask_of("sliding_window", 10, 15, &win, 1), 0);
    assert_int_equal(mask_of("causal_sliding_window", 10, 7, &win, 1), 1);
    assert_int_equal(mask_of("causal_sliding_window", 10, 6, &win, 1), 0);
    assert_int_equal(mask_of("causal_sliding_window", 10, 11, &win, 1), 0);
    int32_t docs[8] = {0, 0, 0, 1, 1, 2, 2, 2};
    fa4_aux_value doc = {"doc_id", FA4_DTYPE_INT32, docs, 8, NULL, 0, 0};
    assert_int_equal(mask_of("document", 2, 0, &doc, 1), 1);
    assert_int_equal(mask_of("document", 3, 2, &doc, 1), 0);
    assert_int_equal(mask_of("document", 7, 5, &doc, 1), 1);
    int32_t pre[1] = {3};
    fa4_aux_value pl = {"prefix_len", FA4_DTYPE_INT32, pre, 1, NULL, 0, 0};
    assert_int_equal(mask_of("prefix_lm", 0, 2, &pl, 1), 1);
    assert_int_equal(mask_of("prefix_lm", 0, 3, &pl, 1), 0);
    assert_int_equal(mask_of("prefix_lm", 5, 3, &pl, 1), 1);
    fa4_aux_value dil[2] = {{"window", FA4_DTYPE_INT32, NULL, 0, NULL, 0, 3},
                            {"dilation", FA4_DTYPE_INT32, NULL, 0, NULL, 0, 2}};
    assert_int_equal(mask_of("dilated_window", 10, 6, dil, 2), 1);
    assert_int_equal(mask_of("dilated_window", 10, 7, dil, 2), 0);
    assert_int_equal(mask_of("dilated_window", 10, 4, dil, 2), 0);
    fa4_aux_value blk = {"block", FA4_DTYPE_INT32, NULL, 0, NULL, 0, 4};
    assert_int_equal(mask_of("block_diagonal", 5, 7, &blk, 1), 1);
    assert_int_equal(mask_of("block_diagonal", 5, 8, &blk, 1), 0);
    uint8_t glob[16] = {1, 0};
    fa4_aux_value lf[2] = {{"is_global", FA4_DTYPE_BOOL, glob, 16, NULL, 0, 0},
                           {"window", FA4_DTYPE_INT32, NULL, 0, NULL, 0, 2}};
    assert_int_equal(mask_of("longformer", 15, 0, lf, 2), 1);
    assert_int_equal(mask_of("longformer", 0, 15, lf, 2), 1);
    assert_int_equal(mask_of("longformer", 9, 15, lf, 2), 0);
    assert_int_equal(mask_of("longformer", 9, 11, lf, 2), 1);
    fa4_aux_value sink[2] = {{"num_sink", FA4_DTYPE_INT32, NULL, 0, NULL, 0, 2},
                             {"window", FA4_DTYPE_INT32, NULL, 0, NULL, 0, 3}};
    assert_int_equal(mask_of("attention_sink", 20, 1, sink, 2), 1);
    assert_int_equal(mask_of("attention_sink", 20, 5, sink, 2), 0);
    assert_int_equal(mask_of("attention_sink", 20, 18, sink, 2), 1);
    assert_int_equal(mask_of("attention_sink", 20, 21, sink, 2), 0);
}

static void shipped_score_values(void **state)
{
    (void)state;
    size_t len;
    char *src = mt_read_mod("alibi", &len);
    fa4__mod *m = mt_parse(src, len, "alibi");
    float slopes[2] = {0.5f, 0.25f};
    fa4_aux_value a = {"slopes", FA4_DTYPE_FP32, slopes, 2, NULL, 0, 0};
    double d;
    assert_true(eval_s(m, 1.0, 0, 1, 10, 2, &a, &d) == 1.0 - 0.25 * 8);
    assert_true(d == 1.0);
    fa4__mod_free(m);
    free(src);
    src = mt_read_mod("softcap", &len);
    m = mt_parse(src, len, "softcap");
    fa4_aux_value cap = {"cap", FA4_DTYPE_FP32, NULL, 0, NULL, 30.0, 0};
    double v = eval_s(m, 45.0, 0, 0, 0, 0, &cap, &d);
    assert_true(fabs(v - 30.0 * tanh(1.5)) < 1e-12);
    assert_true(fabs(d - (1 - tanh(1.5) * tanh(1.5))) < 1e-12);
    fa4__mod_free(m);
    free(src);
    /* T5 buckets: exact below max_exact, logarithmic above, capped */
    src = mt_read_mod("t5_bias", &len);
    m = mt_parse(src, len, "t5_bias");
    float tab[32];
    for (int i = 0; i < 32; i++)
        tab[i] = (float)i;
    fa4_aux_value t5[3] = {{"bias", FA4_DTYPE_FP32, tab, 32, NULL, 0, 0},
                           {"num_buckets", FA4_DTYPE_INT32, NULL, 0, NULL, 0, 32},
                           {"max_distance", FA4_DTYPE_INT32, NULL, 0, NULL, 0, 128}};
    assert_true(eval_s(m, 0, 0, 0, 10, 7, t5, NULL) == 3);        /* rel -3: bucket 3 */
    assert_true(eval_s(m, 0, 0, 0, 7, 10, t5, NULL) == 16 + 3);   /* rel +3 */
    assert_true(eval_s(m, 0, 0, 0, 0, 16, t5, NULL) == 16 + 8 + 2); /* log(2)/log(16)*8 = 2 */
    assert_true(eval_s(m, 0, 0, 0, 0, 1000, t5, NULL) == 31);     /* capped */
    fa4__mod_free(m);
    free(src);
}

static void identity_without_mods(void **state)
{
    (void)state;
    fa4__mod *m = inline_mod("bool mask_mod(int b, int h, int q, int kv) { return false; }");
    double v, d;
    fa4__diag dg;
    assert_int_equal(fa4__mod_eval_score(m, 2.5, 0, 0, 0, 0, NULL, 0, &v, &d, &dg), FA4_OK);
    assert_true(v == 2.5 && d == 1.0);
    fa4__mod_free(m);
    m = inline_mod("float score_mod(float s, int b, int h, int q, int kv) { return s; }");
    int ok = 0;
    assert_int_equal(fa4__mod_eval_mask(m, 0, 0, 0, 0, NULL, 0, &ok, &dg), FA4_OK);
    assert_int_equal(ok, 1);
    fa4__mod_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(int_semantics),
        cmocka_unit_test(logic_is_lazy),
        cmocka_unit_test(aux_reads),
        cmocka_unit_test(shipped_mask_values),
        cmocka_unit_test(shipped_score_values),
        cmocka_unit_test(identity_without_mods),
        cmocka_unit_test(derivative_shipped_mods),
        cmocka_unit_test(derivative_test_cases),
        cmocka_unit_test(derivative_each_builtin),
        cmocka_unit_test(derivative_aux),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
