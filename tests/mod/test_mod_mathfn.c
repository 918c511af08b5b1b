/*
 * test_mod_mathfn.c - the error bounds of the default math of emitted mods (src/jit/mod/mathfn.h),
 * checked on the CPU. The test compiles the very macros the emitter turns into CUDA, with the
 * PTX approximations they use emulated at their documented worst case (PTX ISA: ex2.approx.f32
 * relative error 2^-22.5; rcp.approx.f32 1 ulp and div.approx.f32 2 ulps, modelled pessimistically
 * as relative 2^-23 and 2^-22): each
 * returns a float as far from the exact value as that error allows, and .ftz flushes subnormal
 * inputs and outputs. Every input is evaluated with each
 * approximation pushed to +max, -max, exact and a random error in between, against long double,
 * over dense sweeps, the edges of every range split and random bit patterns. The bounds asserted
 * are the ones mathfn.h and the emitted header document. Special values are checked exactly, and
 * the simpler forms (no correction, no polynomial) are shown to break the bounds, so the sweeps
 * are dense enough to see what the corrections are for.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jit/mod/mathfn.h"

/* ------------------------------------------------------------------ emulated PTX approximations */
enum { ERR_EXACT, ERR_UP, ERR_DOWN, ERR_RANDOM };
static int rcp_mode, ex2_mode;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static long double uniform_pm1(void) /* in [-1, 1] */
{
    return (long double)(next_u64() >> 11) / (long double)(1ull << 52) - 1.0L;
}

/* a float as far from `exact` as the documented relative error allows, in the mode's direction */
static float approx(long double exact, long double max_rel, int mode)
{
    long double p = exact;
    switch (mode) {
    case ERR_UP: p = exact * (1.0L + max_rel); break;
    case ERR_DOWN: p = exact * (1.0L - max_rel); break;
    case ERR_RANDOM: p = exact * (1.0L + max_rel * uniform_pm1()); break;
    default: break;
    }
    float f = (float)p;
    if (isfinite(f) && fabsl((long double)f - exact) > max_rel * fabsl(exact))
        f = nextafterf(f, (float)exact);
    return f;
}

static float ftz(float x)
{
    return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x;
}

static float fa4_rcp_approx(float x)
{
    x = ftz(x);
    if (x == 0.0f)
        return copysignf(INFINITY, x);
    if (isinf(x))
        return copysignf(0.0f, x);
    if (isnan(x))
        return x;
    return ftz(approx(1.0L / (long double)x, 0x1p-23L, rcp_mode));
}

/* div.approx.f32 of 1 by x: 2 ulps for |x| in [2^-126, 2^126] (fa4_fdiv never passes others) */
static float fa4_rcp_div(float x)
{
    if (x == 0.0f || isinf(x) || isnan(x))
        return fa4_rcp_approx(x);
    return approx(1.0L / (long double)x, 0x1p-22L, rcp_mode);
}

static float fa4_ex2_approx(float x)
{
    if (isnan(x))
        return x;
    if (x == -INFINITY)
        return 0.0f;
    return ftz(approx(exp2l((long double)ftz(x)), 0x1.6a09e667f3bcc909p-23L /* 2^-22.5 */, ex2_mode));
}

/* min.NaN.xorsign.abs.f32 x, c for c > 0: copysign(min(|x|, c), x), NaN stays NaN */
static float fa4_clamp_xorsign(float x, float c)
{
    return isnan(x) ? x : copysignf(fminf(fabsf(x), c), x);
}

static int fa4_as_int(float x)
{
    int i;
    memcpy(&i, &x, sizeof i);
    return i;
}

static float fa4_as_float(int i)
{
    float x;
    memcpy(&x, &i, sizeof x);
    return x;
}

/* the code under test, as C */
FA4__MATHFN_FDIV(static)
FA4__MATHFN_RCP_U(static)
FA4__MATHFN_FDIV_U(static)
FA4__MATHFN_EXPF(static)
FA4__MATHFN_EXP2F(static)
FA4__MATHFN_LOG_CORE(static)
FA4__MATHFN_LOGF(static)
FA4__MATHFN_LOG2F(static)
FA4__MATHFN_TANHF(static)
#define fa4_tanhf fa4_tanhf_corrected
FA4__MATHFN_TANHF_CORRECTED(static)
#undef fa4_tanhf

/* ------------------------------------------------------------------------------------ measuring */
/* |got - want| in units of the float ulp at want (subnormal spacing below 2^-126) */
static double ulps(float got, long double want)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got) ? 0.0 : INFINITY;
    if (isinf(want) || isinf(got))
        return (float)want == got ? 0.0 : INFINITY;
    long double a = fabsl(want);
    int e = a < 0x1p-126L ? -126 : ilogbl(a);
    return (double)(fabsl((long double)got - want) / ldexpl(1.0L, e - 23));
}

typedef float (*fn1)(float);
typedef struct {
    double worst;
    float at, at2;
    long n;
} tally;

static const int modes2[][2] = {{ERR_EXACT, ERR_EXACT}, {ERR_UP, ERR_UP},     {ERR_DOWN, ERR_DOWN},
                                {ERR_UP, ERR_DOWN},     {ERR_DOWN, ERR_UP},   {ERR_RANDOM, ERR_RANDOM}};

static void note(tally *t, double u, float x, float y)
{
    t->n++;
    if (u > t->worst) {
        t->worst = u;
        t->at = x;
        t->at2 = y;
    }
}

/* every error combination of both approximations */
static void check1(tally *t, fn1 f, float x, long double want)
{
    for (size_t m = 0; m < sizeof modes2 / sizeof modes2[0]; m++) {
        rcp_mode = modes2[m][0];
        ex2_mode = modes2[m][1];
        note(t, ulps(f(x), want), x, 0.0f);
    }
    rcp_mode = ex2_mode = ERR_EXACT;
}

static float random_float(void) /* any finite float, every exponent equally likely */
{
    for (;;) {
        float x = fa4_as_float((int)(uint32_t)next_u64());
        if (isfinite(x))
            return x;
    }
}

static void report(const char *name, const tally *t, double bound)
{
    printf("%-8s %9ld evaluations, worst %.3f ulp at %a (%a); bound %.2f\n", name, t->n, t->worst,
           (double)t->at, (double)t->at2, bound);
}

/* ---------------------------------------------------------------------------------- division */
/* below 2^-102 the residual a - b q is not representable and the correction is lost */
static void div_case(tally *t, float a, float b)
{
    if (fabsf(a) < 0x1p-102f)
        t++;
    long double want = (long double)a / (long double)b;
    if (fabsl(want) < 0x1p-126L || fabsl(want) > 0x1.fffffep127L)
        return; /* the result's own range: underflow / overflow are checked separately */
    if (fabsf(b) <= 0x1p-128f)
        return; /* acts as 0 (checked below) */
    for (int mode = ERR_EXACT; mode <= ERR_RANDOM; mode++) {
        rcp_mode = mode;
        note(t, ulps(fa4_fdiv(a, b), want), a, b);
    }
    rcp_mode = ERR_EXACT;
}

static void division_bound(void **state)
{
    (void)state;
    tally tt[2], *t = tt;
    memset(tt, 0, sizeof tt);
    for (int i = 0; i < 200000; i++) /* random operands of every magnitude */
        div_case(t, random_float(), random_float());
    for (int i = 0; i < 100000; i++) { /* scores over a soft-cap, and mantissas of b densely */
        float b = 1.0f + (float)i * 0x1p-17f;
        div_case(t, (float)(uniform_pm1() * 200.0L), 30.0f);
        div_case(t, 1.0f + (float)(i % 977) * 0x1p-10f, b);
    }
    for (int i = 0; i < 20000; i++) { /* huge divisors and subnormal ones down to 2^-128 */
        div_case(t, random_float(), ldexpf(1.0f + (float)i * 0x1p-15f, 126 + i % 2));
        div_case(t, ldexpf((float)(uniform_pm1()), -30), ldexpf(1.0f + (float)(i + 1) * 0x1p-15f, -128));
        div_case(t, ldexpf((float)(uniform_pm1()), -30), ldexpf(1.0f + (float)i * 0x1p-15f, -127));
    }
    report("fdiv", &tt[0], 1.0);
    report("fdiv a<2^-102", &tt[1], 4.5);
    assert_true(tt[0].worst <= 1.0 && tt[1].worst <= 4.5 && tt[1].n > 1000);
    /* a representable quotient is exact, with the reciprocal off either way */
    for (int mode = ERR_EXACT; mode <= ERR_DOWN; mode++) {
        rcp_mode = mode;
        for (int n = 1; n <= 4096; n++)
            for (int k = -3; k <= 3; k++) {
                float b = ldexpf(1.0f, k) * (float)(1 + n % 7);
                assert_true(fa4_fdiv((float)n * b, b) == (float)n);
            }
        assert_true(fa4_fdiv(3.0f, 12.0f) == 0.25f && fa4_fdiv(0.75f, 3.0f) == 0.25f);
    }
    rcp_mode = ERR_EXACT;
    /* IEEE special cases */
    assert_true(fa4_fdiv(1.0f, 0.0f) == INFINITY && fa4_fdiv(-1.0f, 0.0f) == -INFINITY);
    assert_true(fa4_fdiv(1.0f, -0.0f) == -INFINITY && isnan(fa4_fdiv(0.0f, 0.0f)));
    assert_true(fa4_fdiv(5.0f, INFINITY) == 0.0f && isnan(fa4_fdiv(INFINITY, INFINITY)));
    assert_true(fa4_fdiv(INFINITY, 3.0f) == INFINITY && isnan(fa4_fdiv(NAN, 3.0f)));
    assert_true(isnan(fa4_fdiv(3.0f, NAN)) && fa4_fdiv(0x1p127f, 0x1p-3f) == INFINITY);
    assert_true(fa4_fdiv(0x1p127f, 0x1.8p127f) == (float)(2.0L / 3.0L));
    assert_true(fa4_fdiv(1.0f, 0x1p-140f) == INFINITY);
    assert_true(fa4_fdiv(0x1p-20f, 0x1p-127f) == 0x1p107f);
    assert_true(fa4_fdiv(3.0f, 0x1.8p127f) == 0x1p-126f && fa4_fdiv(-0x1.8p-20f, 0x1.8p-128f) == -0x1p108f);
    /* below 2^-128 the divisor acts as 0 (flush-to-zero), whatever a is */
    assert_true(fa4_fdiv(0x1p-20f, 0x1p-140f) == INFINITY && isnan(fa4_fdiv(0.0f, 0x1p-140f)));
    /* a times the approximate reciprocal, uncorrected: beyond the bound */
    double naive = 0;
    rcp_mode = ERR_UP;
    for (int i = 0; i < 20000; i++) {
        float a = 1.0f + (float)i * 0x1p-14f, b = 3.0f + (float)(i % 101) * 0x1p-8f;
        naive = fmax(naive, ulps(a * fa4_rcp_approx(b), (long double)a / (long double)b));
    }
    rcp_mode = ERR_EXACT;
    printf("fdiv without the correction: worst %.2f ulp\n", naive);
    assert_true(naive > 1.0);
}

/* a / b for a divisor the same at every position: a times the IEEE reciprocal (C's float division
 * is IEEE on this host, as div.rn.f32 is on the GPU), two roundings */
static void division_uniform_bound(void **state)
{
    (void)state;
    tally t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < 300000; i++) {
        float a = random_float(), b = random_float();
        if (i % 3 == 1)
            a = (float)(uniform_pm1() * 200.0L), b = 30.0f + (float)(i % 4096) * 0x1p-7f;
        if (i % 3 == 2)
            b = 1.0f + (float)(i % 131072) * 0x1p-17f;
        long double want = (long double)a / (long double)b;
        if (fabsf(b) < 0x1p-126f || fabsf(b) > 0x1p126f || fabsl(want) < 0x1p-126L ||
            fabsl(want) > 0x1.fffffep127L)
            continue;
        note(&t, ulps(fa4_fdiv_u(a, b), want), a, b);
    }
    report("fdiv_u", &t, 2.0);
    assert_true(t.worst < 2.0 && t.n > 100000);
    assert_true(fa4_fdiv_u(1.0f, 0.0f) == INFINITY && isnan(fa4_fdiv_u(0.0f, 0.0f)));
    assert_true(fa4_fdiv_u(5.0f, INFINITY) == 0.0f && isnan(fa4_fdiv_u(INFINITY, INFINITY)));
    assert_true(fa4_fdiv_u(-INFINITY, -1.0f) == INFINITY && isnan(fa4_fdiv_u(NAN, 2.0f)));
    assert_true(isnan(fa4_fdiv_u(3.0f, NAN)) && fa4_fdiv_u(1.0f, -0.0f) == -INFINITY);
    assert_true(fa4_fdiv_u(7.5f, 2.5f) == 3.0f && fa4_fdiv_u(-6.0f, 0.25f) == -24.0f);
}

/* ------------------------------------------------------------------------------------ exp, exp2 */
static void exp_bounds(void **state)
{
    (void)state;
    tally te = {0}, t2 = {0};
    for (int i = 0; i <= 400000; i++) {
        float x = -87.0f + (float)i * (88.7f + 87.0f) / 400000.0f;
        check1(&te, fa4_expf, x, expl((long double)x));
        float y = -125.0f + (float)i * (253.0f / 400000.0f);
        check1(&t2, fa4_exp2f, y, exp2l((long double)y));
    }
    for (int i = 0; i < 100000; i++) { /* tiny and random arguments */
        float x = ldexpf((float)uniform_pm1(), -(i % 40));
        check1(&te, fa4_expf, x, expl((long double)x));
        check1(&t2, fa4_exp2f, x, exp2l((long double)x));
    }
    report("expf", &te, 3.5);
    report("exp2f", &t2, 3.5);
    assert_true(te.worst <= 3.5 && t2.worst <= 3.5);
    assert_true(fa4_expf(0.0f) == 1.0f && fa4_expf(-0.0f) == 1.0f);
    assert_true(fa4_expf(INFINITY) == INFINITY && fa4_expf(-INFINITY) == 0.0f);
    assert_true(isnan(fa4_expf(NAN)) && fa4_expf(89.0f) == INFINITY && fa4_expf(-110.0f) == 0.0f);
    assert_true(fa4_exp2f(3.0f) == 8.0f && fa4_exp2f(-INFINITY) == 0.0f);
    /* the product x log2(e) rounded and nothing more: tens of ulps at |x| ~ 88 */
    double naive = 0;
    for (int i = 0; i < 20000; i++) {
        float x = 80.0f + (float)i * 0x1p-12f;
        naive = fmax(naive, ulps(fa4_ex2_approx(x * 0x1.715476p+0f), expl((long double)x)));
    }
    printf("expf without the remainder: worst %.1f ulp\n", naive);
    assert_true(naive > 3.5);
}

/* ------------------------------------------------------------------------------------ log, log2 */
static long double log2_ld(long double x)
{
    return log2l(x);
}

static void log_case(tally *tl, tally *t2, float x)
{
    long double w = logl((long double)x), w2 = log2_ld((long double)x);
    note(tl, ulps(fa4_logf(x), w), x, 0.0f);
    note(t2, ulps(fa4_log2f(x), w2), x, 0.0f);
}

static void log_bounds(void **state)
{
    (void)state;
    tally tl = {0}, t2 = {0};
    for (int i = 0; i < 300000; i++) { /* every positive finite float is a bit pattern below */
        float x = fa4_as_float((int)(next_u64() % 0x7f7fffffu) + 1);
        log_case(&tl, &t2, x);
    }
    for (int i = -100000; i <= 100000; i++) /* around 1, where log is small */
        log_case(&tl, &t2, 1.0f + (float)i * 0x1p-23f);
    for (int i = 0; i <= 200000; i++) { /* [1/2, 2] and the split at sqrt(1/2), sqrt(2) */
        log_case(&tl, &t2, 0.5f + (float)i * (1.5f / 200000.0f));
        log_case(&tl, &t2, fa4_as_float(0x3f3504f3 - 100 + i % 200));
        log_case(&tl, &t2, fa4_as_float(0x3fb504f3 - 100 + i % 200));
    }
    for (int i = 1; i < 4096; i++) /* integers, as t5_bias feeds them */
        log_case(&tl, &t2, (float)i);
    report("logf", &tl, 2.0);
    report("log2f", &t2, 2.0);
    assert_true(tl.worst <= 2.0 && t2.worst <= 2.0);
    for (int k = -149; k <= 127; k++) { /* powers of two: exact in log2, log(2^k) ~ k ln 2 */
        assert_true(fa4_log2f(ldexpf(1.0f, k)) == (float)k);
        assert_true(fa4_logf(ldexpf(1.0f, k)) == (float)((long double)k * logl(2.0L)));
    }
    assert_true(fa4_logf(1.0f) == 0.0f && fa4_log2f(1.0f) == 0.0f);
    assert_true(fa4_logf(0.0f) == -INFINITY && fa4_logf(-0.0f) == -INFINITY);
    assert_true(isnan(fa4_logf(-1.0f)) && isnan(fa4_log2f(-0x1p-149f)) && isnan(fa4_logf(NAN)));
    assert_true(fa4_logf(INFINITY) == INFINITY && fa4_log2f(INFINITY) == INFINITY);
    assert_true(isnan(fa4_logf(-INFINITY)));
    /* t5_bias's bucket boundary: log(n / 8) / log(128 / 8) * 8 lands exactly on 2, 4 */
    assert_true(fa4_fdiv(fa4_logf(2.0f), fa4_logf(16.0f)) == 0.25f);
    assert_true(fa4_fdiv(fa4_logf(4.0f), fa4_logf(16.0f)) == 0.5f);
}

/* -------------------------------------------------------------------------------------- tanh */
/* The rational of fa4_tanhf with the quotient by the approximate reciprocal alone, on x clamped to
 * [-c, c]: the default form for c = 10.25; for c = 9.5 (the fit's end) it shows why the clamp is
 * past the fit. The literals are read from the macro's own text, so it stays the header's rational */
static float tanh_p[8], tanh_q[8];
static int tanh_np, tanh_nq;

/* the literal after each occurrence of `prefix` in `text`, in order */
static int literals_after(const char *text, const char *prefix, float *out, int max)
{
    int n = 0;
    for (const char *c = strstr(text, prefix); c && n < max; c = strstr(c + 1, prefix))
        out[n++] = strtof(c + strlen(prefix), NULL);
    return n;
}

/* the clamps of the two forms; the coefficients (the same in both: checked) */
static void tanh_literals(float *clamp, float *clamp_corrected)
{
    const char *t = FA4__MATH_TEXT(FA4__MATHFN_TANHF), *tc = FA4__MATH_TEXT(FA4__MATHFN_TANHF_CORRECTED);
    assert_int_equal(literals_after(t, "fa4_clamp_xorsign(x, ", clamp, 2), 1);
    assert_int_equal(literals_after(tc, "fa4_clamp_xorsign(x, ", clamp_corrected, 2), 1);
    const char *u = strstr(t, "float z"), *uc = strstr(tc, "float z"), *e = strstr(t, "return");
    assert_true(u && uc && e && strncmp(u, uc, (size_t)(e - u)) == 0);
    tanh_np = literals_after(t, "float p = ", tanh_p, 1);
    tanh_np += literals_after(t, "p = fmaf(p, z, ", tanh_p + tanh_np, 7);
    tanh_nq = literals_after(t, "float q = ", tanh_q, 1);
    tanh_nq += literals_after(t, "q = fmaf(q, z, ", tanh_q + tanh_nq, 7);
}

static float tanh_uncorrected(float x, float clamp)
{
    const float a = fa4_clamp_xorsign(x, clamp), z = a * a;
    float p = tanh_p[0], q = tanh_q[0];
    for (int i = 1; i < tanh_np; i++)
        p = fmaf(p, z, tanh_p[i]);
    for (int i = 1; i < tanh_nq; i++)
        q = fmaf(q, z, tanh_q[i]);
    return fa4_clamp_xorsign(fmaf(a * z, p, a) * fa4_rcp_approx(q), 1.0f);
}

static void tanh_case(tally *t, tally *tc, float *biggest, float x)
{
    const long double want = tanhl((long double)x);
    check1(t, fa4_tanhf, x, want);
    check1(tc, fa4_tanhf_corrected, x, want);
    for (int mode = ERR_UP; mode <= ERR_DOWN; mode++) {
        rcp_mode = mode;
        *biggest = fmaxf(*biggest, fmaxf(fabsf(fa4_tanhf(x)), fabsf(fa4_tanhf_corrected(x))));
    }
    rcp_mode = ERR_EXACT;
}

#define TANHF_BOUND 6.75
#define TANHF_CORRECTED_BOUND 5.25

static void tanh_bound(void **state)
{
    (void)state;
    tally t = {0}, tc = {0};
    float biggest = 0.0f;
    for (int i = -600000; i <= 600000; i++) /* [-18.3, 18.3] */
        tanh_case(&t, &tc, &biggest, (float)i * 0x1p-15f);
    for (int32_t b = fa4_as_int(0x1p-13f); b <= fa4_as_int(10.5f); b += 61) /* every 61st float */
        tanh_case(&t, &tc, &biggest, fa4_as_float(b));
    for (int i = 0; i < 4000; i++) { /* where tanh rounds to 1, the clamps, tiny arguments */
        tanh_case(&t, &tc, &biggest, fa4_as_float(fa4_as_int(9.0109f) - 2000 + i));
        tanh_case(&t, &tc, &biggest, -fa4_as_float(fa4_as_int(9.5f) - 2000 + i));
        tanh_case(&t, &tc, &biggest, fa4_as_float(fa4_as_int(10.25f) - 2000 + i));
        tanh_case(&t, &tc, &biggest, ldexpf(1.0f + (float)i / 4000.0f, -(i % 150)));
    }
    for (int i = 0; i < 100000; i++)
        tanh_case(&t, &tc, &biggest, random_float());
    report("tanhf", &t, TANHF_BOUND);
    report("tanhf corrected", &tc, TANHF_CORRECTED_BOUND);
    printf("tanhf: largest |result| %a\n", (double)biggest);
    assert_true(t.worst <= TANHF_BOUND && tc.worst <= TANHF_CORRECTED_BOUND && biggest <= 1.0f);
    for (int mode = ERR_EXACT; mode <= ERR_DOWN; mode++) { /* the reciprocal off either way */
        rcp_mode = mode;
        for (int k = 0; k < 2; k++) {
            float (*f)(float) = k ? fa4_tanhf_corrected : fa4_tanhf;
            assert_true(f(0.0f) == 0.0f && !signbit(f(0.0f)) && signbit(f(-0.0f)));
            assert_true(f(10.25f) == 1.0f && f(-10.25f) == -1.0f);
            assert_true(f(INFINITY) == 1.0f && f(-INFINITY) == -1.0f);
            assert_true(f(1e30f) == 1.0f && f(-50.0f) == -1.0f);
            assert_true(isnan(f(NAN)) && isnan(f(-NAN)));
            /* tanh x rounds to x below 2^-12: exact with the correction, within an ulp without */
            assert_true(ulps(f(0x1p-20f), 0x1p-20L) <= (k ? 0.0 : 1.0));
            assert_true(ulps(f(-0x1p-100f), -0x1p-100L) <= (k ? 0.0 : 1.0));
        }
        assert_true(fa4_tanhf_corrected(9.5f) == 1.0f && fa4_tanhf_corrected(-9.5f) == -1.0f);
    }
    rcp_mode = ERR_EXACT;
    float clamp, clamp_corrected;
    tanh_literals(&clamp, &clamp_corrected);
    assert_true(tanh_np == 4 && tanh_nq == 5 && clamp == 10.25f && clamp_corrected == 9.5f && tanh_q[4] == 1.0f);
    assert_true(tanh_uncorrected(0.5f, clamp) == fa4_tanhf(0.5f));
    /* the default form clamped at the fit's end: its result at the clamp falls short of 1 where
     * the reciprocal rounds down, which the 10.25 clamp's margin covers */
    int short_of_1 = 0;
    for (int mode = ERR_EXACT; mode <= ERR_DOWN; mode++) {
        rcp_mode = mode;
        short_of_1 |= tanh_uncorrected(9.5f, clamp_corrected) < 1.0f;
    }
    rcp_mode = ERR_EXACT;
    assert_true(short_of_1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(division_bound),
        cmocka_unit_test(division_uniform_bound),
        cmocka_unit_test(exp_bounds),
        cmocka_unit_test(log_bounds),
        cmocka_unit_test(tanh_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
