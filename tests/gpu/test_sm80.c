/*
 * test_sm80.c - the GPU test suite of the sm80 kernel path. Compiles every mod/dtype/head-dim
 * variant the cases need (in parallel), then runs each case on random inputs against the float64
 * reference of ref.c: forward O and LSE, backward dQ, dK, dV and trainable aux gradients, with
 * every output poisoned (NaN) first so an unwritten element fails. Also: block masks created on
 * the GPU compared list by list with the CPU, deterministic backward compared bitwise across two
 * runs, launch validation, and a timing of the benchmark shape. Prints a table, then a summary per
 * feature (cases, passes, worst error). Exits 0 with "SKIP: <why>" where there is no GPU.
 *
 * Usage: test_sm80 [--quick] [--bench-only] [--no-bench] [--filter SUBSTR] [--seed N]
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_util.h"

const fa4__cu *g_cu;
static fa4_ctx *g_ctx;
static int g_threads = 4;
static int g_verbose = 0;

/* ------------------------------------------------------------------------------------ mods */
enum { M_NONE, M_CAUSAL, M_ALIBI, M_SOFTCAP, M_WINDOW, M_RELBIAS, M_ALIBI_CAUSAL, M_DOCUMENT, M_COUNT };

typedef struct mod_def {
    const char *name;
    const char *src;
    const char *trainable;
    int has_mask;
} mod_def;

static const mod_def mods[M_COUNT] = {
    {"none", NULL, NULL, 0},
    {"causal", "bool mask_mod(int b, int h, int q_idx, int kv_idx) {\n    return q_idx >= kv_idx;\n}\n",
     NULL, 1},
    {"alibi",
     "/* ALiBi */\nfloat score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {\n"
     "    return score + slopes[h] * (float)(kv_idx - q_idx);\n}\n",
     NULL, 0},
    {"softcap",
     "float score_mod(float score, int b, int h, int q_idx, int kv_idx, float cap) {\n"
     "    return cap * tanhf(score / cap);\n}\n",
     NULL, 0},
    {"window",
     "bool mask_mod(int b, int h, int q_idx, int kv_idx, int window) {\n"
     "    return q_idx >= kv_idx && q_idx - kv_idx < window;\n}\n",
     NULL, 1},
    {"relbias",
     "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias) {\n"
     "    return score + bias[clamp(kv_idx - q_idx + 256, 0, 511)];\n}\n",
     "bias", 0},
    {"alibi_causal",
     "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {\n"
     "    return score + slopes[h] * (float)(kv_idx - q_idx);\n}\n"
     "bool mask_mod(int b, int h, int q_idx, int kv_idx) {\n    return q_idx >= kv_idx;\n}\n",
     NULL, 1},
    {"document",
     "bool mask_mod(int b, int h, int q_idx, int kv_idx, const int32 *doc) {\n"
     "    return doc[q_idx] == doc[kv_idx];\n}\n",
     NULL, 1},
};

static int64_t relbias_index(int q_idx, int kv_idx)
{
    int e = kv_idx - q_idx + 256;
    return e < 0 ? 0 : (e > 511 ? 511 : e);
}

/* --------------------------------------------------------------------------------- kernels */
typedef struct kvariant {
    int mod, dtype, d, dv;
    fa4_kernel *k;
    fa4__mod *m; /* host-side parse for the CPU evaluator */
    fa4_status st;
    char err[512];
    double ms;
} kvariant;

static kvariant g_kv[128];
static int g_nkv;

static int variant_index(int mod, int dtype, int d, int dv)
{
    for (int i = 0; i < g_nkv; i++)
        if (g_kv[i].mod == mod && g_kv[i].dtype == dtype && g_kv[i].d == d && g_kv[i].dv == dv)
            return i;
    if (g_nkv == (int)(sizeof g_kv / sizeof g_kv[0])) {
        fprintf(stderr, "too many kernel variants\n");
        exit(2);
    }
    g_kv[g_nkv] = (kvariant){mod, dtype, d, dv, NULL, NULL, FA4_OK, "", 0};
    return g_nkv++;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *g_arch; /* deviceless compile for this arch; NULL = the device's */

static pthread_mutex_t g_next_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_next;

static void *compile_worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&g_next_lock);
        int i = g_next++;
        pthread_mutex_unlock(&g_next_lock);
        if (i >= g_nkv)
            return NULL;
        kvariant *v = &g_kv[i];
        fa4_kernel_spec spec;
        fa4_kernel_spec_init(&spec);
        spec.source = mods[v->mod].src;
        spec.source_name = mods[v->mod].name;
        spec.dtype = v->dtype;
        spec.head_dim = v->d;
        spec.head_dim_v = v->dv;
        spec.path = FA4_PATH_SM80;
        spec.arch = g_arch;
        spec.flags = FA4_COMPILE_FWD | FA4_COMPILE_BWD | (mods[v->mod].has_mask ? FA4_COMPILE_BLOCK_MASK : 0);
        const char *tr[1] = {mods[v->mod].trainable};
        if (tr[0]) {
            spec.trainable_aux = tr;
            spec.num_trainable_aux = 1;
        }
        double t0 = now_ms();
        v->st = fa4_jit_compile(g_ctx, &spec, &v->k);
        v->ms = now_ms() - t0;
        if (v->st != FA4_OK) {
            snprintf(v->err, sizeof v->err, "%s: %s | %.300s", fa4_status_name(v->st),
                     fa4_ctx_errmsg(g_ctx), fa4_ctx_compile_log(g_ctx));
        } else if (strstr(fa4_ctx_compile_log(g_ctx), "warning")) {
            snprintf(v->err, sizeof v->err, "compile warnings: %.400s", fa4_ctx_compile_log(g_ctx));
        }
        if (mods[v->mod].src) {
            fa4__diag dg;
            if (fa4__mod_parse(mods[v->mod].src, strlen(mods[v->mod].src), mods[v->mod].name, &v->m,
                               &dg) != FA4_OK) {
                v->st = FA4_ERR_MOD_CHECK;
                snprintf(v->err, sizeof v->err, "host parse: %.400s", dg.rendered);
            } else if (tr[0]) {
                fa4__mod_set_trainable(v->m, tr, 1, &dg);
            }
        }
    }
}

/* Returns the number of variants that failed, spilled or warned. */
static int compile_all(void)
{
    int bad = 0;
    pthread_t th[16];
    int n = g_threads < 16 ? g_threads : 16;
    if (n > g_nkv)
        n = g_nkv;
    double t0 = now_ms();
    g_next = 0;
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, compile_worker, NULL);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    printf("compiled %d kernel variants in %.1f s (%d threads)\n", g_nkv, (now_ms() - t0) / 1e3, n);
    printf("%-14s %-5s %-7s %9s  %s\n", "mod", "dtype", "d/dv", "ms", "programs: regs/spill-st/spill-ld/smem");
    for (int i = 0; i < g_nkv; i++) {
        kvariant *v = &g_kv[i];
        printf("%-14s %-5s %3d/%-3d %9.1f ", mods[v->mod].name, v->dtype == FA4_DTYPE_BF16 ? "bf16" : "fp16",
               v->d, v->dv, v->ms);
        if (v->st != FA4_OK) {
            printf(" COMPILE FAILED %s\n", v->err);
            bad++;
            continue;
        }
        if (v->err[0]) {
            printf(" %s\n", v->err);
            bad++;
        }
        fa4_kernel_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        if (fa4_kernel_get_info(v->k, &info) == FA4_OK)
            for (int p = 0; p < info.num_programs; p++) {
                printf(" %s:%d/%d/%d/%d", info.programs[p].name, info.programs[p].registers,
                       info.programs[p].spill_stores, info.programs[p].spill_loads,
                       info.programs[p].shared_dynamic);
                if (info.programs[p].spill_stores || info.programs[p].spill_loads)
                    bad++;
            }
        printf("\n");
    }
    return bad;
}

/* ----------------------------------------------------------------------------------- cases */
enum { L_BHSD, L_BSHD, L_PADDED, L_COUNT };
static const char *layout_names[L_COUNT] = {"bhsd", "bshd", "padded"};
enum { BM_NONE, BM_GPU, BM_RANDOM };

typedef struct tcase {
    int mod, dtype, d, dv;
    int batch, hq, hkv, sq, skv;
    int layout, varlen, bm, q_block, kv_block, bm_heads1;
    int64_t q_off, kv_off;
    int bwd, determ;
    int validation; /* > 0: a launch-validation case number */
    uint64_t seed;
    char tags[256];
} tcase;

static tcase g_cases[600];
static int g_ncases;

static void add_case(tcase c)
{
    if (g_ncases == (int)(sizeof g_cases / sizeof g_cases[0]))
        return;
    c.seed = 1000 + (uint64_t)g_ncases * 7919;
    g_cases[g_ncases++] = c;
}

static tcase random_case(rng *r, int mod, int dtype, int d, int dv)
{
    tcase c;
    memset(&c, 0, sizeof c);
    c.mod = mod;
    c.dtype = dtype;
    c.d = d;
    c.dv = dv;
    c.batch = rng_int(r, 1, 3);
    static const int hk_opts[][2] = {{1, 1}, {2, 2}, {4, 2}, {4, 1}, {6, 3}, {3, 3}, {8, 2}};
    int o = rng_int(r, 0, 6);
    c.hq = hk_opts[o][0];
    c.hkv = hk_opts[o][1];
    if (d >= 192 && c.hq > 4) { c.hq = 4; c.hkv = 2; }
    const int big = rng_int(r, 0, 9) == 0;
    c.sq = big ? rng_int(r, 300, 700) : rng_int(r, 1, 300);
    c.skv = rng_int(r, 0, 3) == 0 ? c.sq : (big ? rng_int(r, 300, 700) : rng_int(r, 1, 300));
    c.layout = rng_int(r, 0, L_COUNT - 1);
    c.bwd = 1;
    return c;
}

static void make_cases(int quick)
{
    rng r = {12345};
    static const int dims[6][2] = {{64, 64}, {96, 96}, {128, 128}, {192, 192}, {256, 256}, {192, 128}};
    const int dtypes[2] = {FA4_DTYPE_BF16, FA4_DTYPE_FP16};
    const int rep = quick ? 1 : 2;
    /* A: every head dim and dtype, plain and with score_mod + mask_mod */
    for (int t = 0; t < 2; t++)
        for (int di = 0; di < 6; di++)
            for (int m = 0; m < 2; m++)
                for (int k = 0; k < rep; k++)
                    add_case(random_case(&r, m ? M_ALIBI_CAUSAL : M_NONE, dtypes[t], dims[di][0], dims[di][1]));
    /* B: every mod */
    for (int t = 0; t < 2; t++)
        for (int m = 0; m < M_COUNT; m++)
            for (int k = 0; k < (quick ? 1 : 6); k++) {
                tcase c = random_case(&r, m, dtypes[t], t ? 64 : 128, t ? 64 : 128);
                if (k == 1 && m != M_DOCUMENT) {
                    c.q_off = rng_int(&r, 0, 40);
                    c.kv_off = rng_int(&r, 0, 40);
                }
                add_case(c);
            }
    /* C: variable-length batches */
    const int vmods[4] = {M_NONE, M_CAUSAL, M_DOCUMENT, M_ALIBI};
    for (int t = 0; t < 2; t++)
        for (int m = 0; m < 4; m++)
            for (int k = 0; k < (quick ? 1 : 4); k++) {
                tcase c = random_case(&r, vmods[m], dtypes[t], t ? 64 : 128, t ? 64 : 128);
                c.varlen = 1;
                c.batch = rng_int(&r, 2, 5);
                add_case(c);
            }
    /* D: block masks, created on the GPU from mask_mod and random ones built on the host */
    const int gmods[3] = {M_CAUSAL, M_WINDOW, M_DOCUMENT};
    const int rmods[3] = {M_NONE, M_CAUSAL, M_ALIBI};
    for (int t = 0; t < 2; t++)
        for (int m = 0; m < 3; m++)
            for (int k = 0; k < (quick ? 1 : 4); k++) {
                tcase c = random_case(&r, gmods[m], dtypes[t], t ? 64 : 128, t ? 64 : 128);
                c.bm = BM_GPU;
                c.q_block = k & 1 ? 256 : 128;
                c.kv_block = k & 2 ? 64 : 128;
                c.bm_heads1 = k & 1;
                c.sq = rng_int(&r, 100, 600);
                c.skv = rng_int(&r, 100, 600);
                add_case(c);
                c = random_case(&r, rmods[m], dtypes[t], t ? 64 : 128, t ? 64 : 128);
                c.bm = BM_RANDOM;
                c.q_block = 128;
                c.kv_block = k & 2 ? 64 : 128;
                c.bm_heads1 = k & 1;
                c.sq = rng_int(&r, 100, 600);
                c.skv = rng_int(&r, 100, 600);
                add_case(c);
            }
    /* E: deterministic backward (bitwise equal across two runs, and correct) */
    const int dmods[4] = {M_NONE, M_CAUSAL, M_RELBIAS, M_ALIBI};
    for (int k = 0; k < (quick ? 4 : 12); k++) {
        tcase c = random_case(&r, dmods[k % 4], dtypes[k % 2], k % 2 ? 64 : 128, k % 2 ? 64 : 128);
        c.determ = 1;
        if (k >= 8) {
            c.varlen = 1;
            c.batch = 3;
        }
        add_case(c);
    }
    /* F: rows with nothing allowed (causal with kv_offset > q_offset) */
    for (int k = 0; k < (quick ? 2 : 8); k++) {
        tcase c = random_case(&r, k & 1 ? M_ALIBI_CAUSAL : M_CAUSAL, dtypes[k % 2], k % 2 ? 64 : 128,
                              k % 2 ? 64 : 128);
        c.q_off = rng_int(&r, 0, 20);
        c.kv_off = c.q_off + rng_int(&r, 1, 150);
        add_case(c);
    }
    /* G: launch validation */
    for (int k = 1; k <= 8; k++) {
        tcase c = random_case(&r, M_ALIBI, FA4_DTYPE_BF16, 128, 128);
        c.validation = k;
        c.sq = 64;
        c.skv = 64;
        add_case(c);
    }
}

/* ---------------------------------------------------------------------------- tensors */
typedef struct dtensor {
    CUdeviceptr ptr;
    size_t bytes;
    int64_t sb, sh, ss;
    int64_t s_fixed; /* rows per batch entry (fixed) or total rows (varlen) */
    int h, d;
    fa4_tensor t;
} dtensor;

static int64_t phys(const dtensor *x, int h, int64_t row, int c)
{
    return (row / x->s_fixed) * x->sb + h * x->sh + (row % x->s_fixed) * x->ss + c;
}

/* [B, H, S, D] or varlen [1, H, T, D] in the case's layout. */
static void make_tensor(dtensor *x, const tcase *c, int dtype, int h, int64_t rows_total, int64_t s_fixed,
                        int d)
{
    const int64_t B = c->varlen ? 1 : rows_total / s_fixed;
    const int64_t S = c->varlen ? rows_total : s_fixed;
    const int64_t pad = c->layout == L_PADDED ? 8 : 0;
    memset(x, 0, sizeof *x);
    x->s_fixed = S;
    x->h = h;
    x->d = d;
    if (c->layout == L_BSHD) {
        x->ss = (int64_t)h * d;
        x->sh = d;
        x->sb = S * x->ss;
    } else {
        x->ss = d + pad;
        x->sh = S * x->ss;
        x->sb = (int64_t)h * x->sh;
    }
    x->bytes = (size_t)(B * x->sb) * 2 + 16;
    CK(g_cu->memAlloc(&x->ptr, x->bytes));
    CK(g_cu->memsetD8Async(x->ptr, 0xff, x->bytes, NULL)); /* NaN everywhere: poison and padding */
    x->t.data = (void *)(uintptr_t)x->ptr;
    x->t.dtype = dtype;
    x->t.ndim = 4;
    x->t.shape[0] = B;
    x->t.shape[1] = h;
    x->t.shape[2] = S;
    x->t.shape[3] = d;
    x->t.strides[0] = x->sb;
    x->t.strides[1] = x->sh;
    x->t.strides[2] = x->ss;
    x->t.strides[3] = 1;
}

static void free_tensor(dtensor *x)
{
    if (x->ptr)
        g_cu->memFree(x->ptr);
    x->ptr = 0;
}

static uint16_t to16(int dtype, double v)
{
    return dtype == FA4_DTYPE_BF16 ? f2bf((float)v) : f2h((float)v);
}
static double from16(int dtype, uint16_t v)
{
    return dtype == FA4_DTYPE_BF16 ? bf2f(v) : h2f(v);
}

/* Random logical values (already rounded to the element type), uploaded in the physical layout. */
static double *upload_random(dtensor *x, int dtype, int64_t rows, rng *r, double sigma)
{
    double *v = malloc(sizeof(double) * (size_t)x->h * rows * x->d);
    uint16_t *buf = malloc(x->bytes);
    CK(g_cu->streamSynchronize(NULL));
    CK(g_cu->memcpyDtoH(buf, x->ptr, x->bytes));
    for (int h = 0; h < x->h; h++)
        for (int64_t i = 0; i < rows; i++)
            for (int c = 0; c < x->d; c++) {
                uint16_t e = to16(dtype, rng_normal(r) * sigma);
                v[((size_t)h * rows + i) * x->d + c] = from16(dtype, e);
                buf[phys(x, h, i, c)] = e;
            }
    CK(g_cu->memcpyHtoD(x->ptr, buf, x->bytes));
    free(buf);
    return v;
}

static double *download(const dtensor *x, int dtype, int64_t rows)
{
    uint16_t *buf = malloc(x->bytes);
    double *v = malloc(sizeof(double) * (size_t)x->h * rows * x->d);
    CK(g_cu->memcpyDtoH(buf, x->ptr, x->bytes));
    for (int h = 0; h < x->h; h++)
        for (int64_t i = 0; i < rows; i++)
            for (int c = 0; c < x->d; c++)
                v[((size_t)h * rows + i) * x->d + c] = from16(dtype, buf[phys(x, h, i, c)]);
    free(buf);
    return v;
}

typedef struct err {
    double rel;    /* ||out - ref|| / ||ref|| */
    double maxabs;
    int64_t bad;   /* non-finite outputs where the reference is finite, or -inf mismatches */
} err;

static err compare(const double *out, const double *ref, size_t n)
{
    err e = {0, 0, 0};
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(ref[i]) && ref[i] < 0) { /* LSE of an empty row */
            if (!(isinf(out[i]) && out[i] < 0))
                e.bad++;
            continue;
        }
        if (!isfinite(out[i])) {
            e.bad++;
            continue;
        }
        const double dlt = out[i] - ref[i];
        num += dlt * dlt;
        den += ref[i] * ref[i];
        if (fabs(dlt) > e.maxabs)
            e.maxabs = fabs(dlt);
    }
    e.rel = den > 0 ? sqrt(num / den) : sqrt(num);
    return e;
}

/* -------------------------------------------------------------------------------- aux */
typedef struct aux_set {
    fa4_aux_value dev[2], host[2];
    int n;
    CUdeviceptr dbuf, grad;
    void *hbuf;
    int64_t grad_numel;
} aux_set;

static void make_aux(aux_set *a, const tcase *c, rng *r, int64_t idx_len)
{
    memset(a, 0, sizeof *a);
    fa4_aux_value v;
    memset(&v, 0, sizeof v);
    switch (c->mod) {
    case M_ALIBI:
    case M_ALIBI_CAUSAL: {
        float *s = malloc(sizeof(float) * c->hq);
        for (int h = 0; h < c->hq; h++)
            s[h] = (float)(0.02 + 0.2 * rng_unif(r));
        v.name = "slopes";
        v.dtype = FA4_DTYPE_FP32;
        v.numel = c->hq;
        a->hbuf = s;
        CK(g_cu->memAlloc(&a->dbuf, sizeof(float) * c->hq));
        CK(g_cu->memcpyHtoD(a->dbuf, s, sizeof(float) * c->hq));
        break;
    }
    case M_SOFTCAP:
        v.name = "cap";
        v.dtype = FA4_DTYPE_FP32;
        v.f = 1.5 + rng_unif(r);
        break;
    case M_WINDOW:
        v.name = "window";
        v.dtype = FA4_DTYPE_INT32;
        v.i = rng_int(r, 1, 120);
        break;
    case M_RELBIAS: {
        float *s = malloc(sizeof(float) * 512);
        for (int i = 0; i < 512; i++)
            s[i] = (float)(0.5 * rng_normal(r));
        v.name = "bias";
        v.dtype = FA4_DTYPE_FP32;
        v.numel = 512;
        a->hbuf = s;
        CK(g_cu->memAlloc(&a->dbuf, sizeof(float) * 512));
        CK(g_cu->memcpyHtoD(a->dbuf, s, sizeof(float) * 512));
        CK(g_cu->memAlloc(&a->grad, sizeof(float) * 512));
        a->grad_numel = 512;
        break;
    }
    case M_DOCUMENT: {
        int32_t *s = malloc(sizeof(int32_t) * (size_t)idx_len);
        const int seg = rng_int(r, 10, 90);
        for (int64_t i = 0; i < idx_len; i++)
            s[i] = (int32_t)(i / seg);
        v.name = "doc";
        v.dtype = FA4_DTYPE_INT32;
        v.numel = idx_len;
        a->hbuf = s;
        CK(g_cu->memAlloc(&a->dbuf, sizeof(int32_t) * (size_t)idx_len));
        CK(g_cu->memcpyHtoD(a->dbuf, s, sizeof(int32_t) * (size_t)idx_len));
        break;
    }
    default:
        return;
    }
    a->n = 1;
    a->dev[0] = v;
    a->host[0] = v;
    a->dev[0].data = (const void *)(uintptr_t)a->dbuf;
    a->dev[0].grad = (void *)(uintptr_t)a->grad;
    a->host[0].data = a->hbuf;
}

static void free_aux(aux_set *a)
{
    if (a->dbuf)
        g_cu->memFree(a->dbuf);
    if (a->grad)
        g_cu->memFree(a->grad);
    free(a->hbuf);
}

/* ------------------------------------------------------------------------- block masks */
typedef struct bmask {
    fa4_block_mask bm;
    CUdeviceptr arr[8];
    unsigned char *status; /* [bmb][bmh][nq][nkv] */
    int ok;                /* GPU-created lists equal the CPU's */
} bmask;

static void bm_alloc(bmask *m, int bmb, int bmh, int nq, int nkv)
{
    const size_t rows = (size_t)bmb * bmh;
    const size_t sz[8] = {rows * nq, rows * nq * nkv, rows * nq, rows * nq * nkv,
                          rows * nkv, rows * nkv * nq, rows * nkv, rows * nkv * nq};
    for (int i = 0; i < 8; i++)
        CK(g_cu->memAlloc(&m->arr[i], sz[i] * 4 + 4));
    m->bm.struct_size = sizeof m->bm;
    m->bm.batch = bmb;
    m->bm.heads = bmh;
    m->bm.num_q_blocks = nq;
    m->bm.num_kv_blocks = nkv;
    m->bm.kv_num_blocks = (const int32_t *)(uintptr_t)m->arr[0];
    m->bm.kv_indices = (const int32_t *)(uintptr_t)m->arr[1];
    m->bm.full_kv_num_blocks = (const int32_t *)(uintptr_t)m->arr[2];
    m->bm.full_kv_indices = (const int32_t *)(uintptr_t)m->arr[3];
    m->bm.q_num_blocks = (const int32_t *)(uintptr_t)m->arr[4];
    m->bm.q_indices = (const int32_t *)(uintptr_t)m->arr[5];
    m->bm.full_q_num_blocks = (const int32_t *)(uintptr_t)m->arr[6];
    m->bm.full_q_indices = (const int32_t *)(uintptr_t)m->arr[7];
}

/* Lists from a status array (partial and full, ascending), both directions. */
static void bm_lists(const unsigned char *st, int rows, int nq, int nkv, int32_t *h[8])
{
    for (int r = 0; r < rows; r++)
        for (int qb = 0; qb < nq; qb++) {
            int np = 0, nf = 0;
            for (int kb = 0; kb < nkv; kb++) {
                const unsigned char s = st[((size_t)r * nq + qb) * nkv + kb];
                if (s == 1)
                    h[1][((size_t)r * nq + qb) * nkv + np++] = kb;
                else if (s == 2)
                    h[3][((size_t)r * nq + qb) * nkv + nf++] = kb;
            }
            h[0][(size_t)r * nq + qb] = np;
            h[2][(size_t)r * nq + qb] = nf;
        }
    for (int r = 0; r < rows; r++)
        for (int kb = 0; kb < nkv; kb++) {
            int np = 0, nf = 0;
            for (int qb = 0; qb < nq; qb++) {
                const unsigned char s = st[((size_t)r * nq + qb) * nkv + kb];
                if (s == 1)
                    h[5][((size_t)r * nkv + kb) * nq + np++] = qb;
                else if (s == 2)
                    h[7][((size_t)r * nkv + kb) * nq + nf++] = qb;
            }
            h[4][(size_t)r * nkv + kb] = np;
            h[6][(size_t)r * nkv + kb] = nf;
        }
}

static size_t bm_size(int i, int rows, int nq, int nkv)
{
    const size_t r = (size_t)rows;
    const size_t sz[8] = {r * nq, r * nq * nkv, r * nq, r * nq * nkv, r * nkv, r * nkv * nq, r * nkv, r * nkv * nq};
    return sz[i];
}

static void bm_random(bmask *m, const tcase *c, rng *r)
{
    const int bmb = c->batch, bmh = c->bm_heads1 ? 1 : c->hq;
    const int nq = (c->sq + c->q_block - 1) / c->q_block, nkv = (c->skv + c->kv_block - 1) / c->kv_block;
    const int rows = bmb * bmh;
    memset(m, 0, sizeof *m);
    bm_alloc(m, bmb, bmh, nq, nkv);
    m->bm.q_block = c->q_block;
    m->bm.kv_block = c->kv_block;
    m->status = malloc((size_t)rows * nq * nkv);
    for (size_t i = 0; i < (size_t)rows * nq * nkv; i++) {
        const double u = rng_unif(r);
        m->status[i] = u < 0.25 ? 0 : (u < 0.7 ? 1 : 2);
    }
    int32_t *h[8];
    for (int i = 0; i < 8; i++)
        h[i] = calloc(bm_size(i, rows, nq, nkv) + 1, 4);
    bm_lists(m->status, rows, nq, nkv, h);
    for (int i = 0; i < 8; i++) {
        CK(g_cu->memcpyHtoD(m->arr[i], h[i], bm_size(i, rows, nq, nkv) * 4));
        free(h[i]);
    }
    m->ok = 1;
}

/* On the GPU through fa4_block_mask_create, checked against the CPU evaluator. */
static fa4_status bm_gpu(bmask *m, const tcase *c, fa4_kernel *k, const fa4__mod *mod, const aux_set *a)
{
    const int bmb = c->batch, bmh = c->bm_heads1 ? 1 : c->hq;
    int64_t nq64, nkv64;
    memset(m, 0, sizeof *m);
    fa4_status st = fa4_block_mask_sizes(bmb, bmh, c->sq, c->skv, c->q_block, c->kv_block, &nq64, &nkv64);
    if (st != FA4_OK)
        return st;
    const int nq = (int)nq64, nkv = (int)nkv64, rows = bmb * bmh;
    bm_alloc(m, bmb, bmh, nq, nkv);
    m->bm.q_block = c->q_block;
    m->bm.kv_block = c->kv_block;
    st = fa4_block_mask_create(k, bmb, bmh, c->sq, c->skv, a->dev, a->n, &m->bm, NULL);
    if (st != FA4_OK)
        return st;
    CK(g_cu->ctxSynchronize());
    m->status = malloc((size_t)rows * nq * nkv);
    for (int b = 0; b < bmb; b++)
        for (int h = 0; h < bmh; h++)
            for (int qb = 0; qb < nq; qb++)
                for (int kb = 0; kb < nkv; kb++) {
                    int any = 0, all = 1;
                    for (int i = qb * c->q_block; i < (qb + 1) * c->q_block && i < c->sq; i++)
                        for (int j = kb * c->kv_block; j < (kb + 1) * c->kv_block && j < c->skv; j++) {
                            int ok = 1;
                            fa4__mod_eval_mask(mod, b, h, i, j, a->host, a->n, &ok, NULL);
                            any |= ok;
                            all &= ok;
                        }
                    m->status[(((size_t)b * bmh + h) * nq + qb) * nkv + kb] = !any ? 0 : (all ? 2 : 1);
                }
    int32_t *h[8], *g = NULL;
    m->ok = 1;
    for (int i = 0; i < 8; i++)
        h[i] = calloc(bm_size(i, rows, nq, nkv) + 1, 4);
    bm_lists(m->status, rows, nq, nkv, h);
    /* compare counts, then the first `count` entries of every list */
    for (int i = 0; i < 8; i += 2) {
        const size_t nrow = bm_size(i, rows, nq, nkv), len = bm_size(i + 1, rows, nq, nkv) / (nrow ? nrow : 1);
        int32_t *gc = malloc(nrow * 4 + 4), *gl = malloc(bm_size(i + 1, rows, nq, nkv) * 4 + 4);
        CK(g_cu->memcpyDtoH(gc, m->arr[i], nrow * 4));
        CK(g_cu->memcpyDtoH(gl, m->arr[i + 1], bm_size(i + 1, rows, nq, nkv) * 4));
        for (size_t rr = 0; rr < nrow; rr++) {
            if (gc[rr] != h[i][rr]) {
                m->ok = 0;
                break;
            }
            if (memcmp(gl + rr * len, h[i + 1] + rr * len, (size_t)gc[rr] * 4)) {
                m->ok = 0;
                break;
            }
        }
        free(gc);
        free(gl);
    }
    free(g);
    for (int i = 0; i < 8; i++)
        free(h[i]);
    return FA4_OK;
}

static void bm_free(bmask *m)
{
    for (int i = 0; i < 8; i++)
        if (m->arr[i])
            g_cu->memFree(m->arr[i]);
    free(m->status);
}

/* ------------------------------------------------------------------------------ one case */
typedef struct case_out {
    err e[6]; /* o, lse, dq, dk, dv, daux */
    int have[6];
    int pass;
    int determ_ok; /* -1: not checked */
    int bm_ok;     /* -1: no GPU block mask */
    char note[200];
} case_out;


static fa4_tensor lse_tensor(CUdeviceptr p, int64_t B, int h, int64_t S)
{
    fa4_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)p;
    t.dtype = FA4_DTYPE_FP32;
    t.ndim = 3;
    t.shape[0] = B;
    t.shape[1] = h;
    t.shape[2] = S;
    t.strides[0] = (int64_t)h * S;
    t.strides[1] = S;
    t.strides[2] = 1;
    return t;
}

static int all_poison(CUdeviceptr p, size_t bytes)
{
    unsigned char *b = malloc(bytes);
    int ok = 1;
    CK(g_cu->memcpyDtoH(b, p, bytes));
    for (size_t i = 0; i < bytes && ok; i++)
        ok = b[i] == 0xff;
    free(b);
    return ok;
}

static int run_validation(const tcase *c, kvariant *kv, fa4_fwd_args *fa, fa4_bwd_args *ba, dtensor *O,
                          case_out *res)
{
    fa4_status want, got;
    fa4_fwd_args a = *fa;
    fa4_bwd_args b = *ba;
    fa4_aux_value aux2[2];
    fa4_block_mask bm;
    int bwd = 0;
    const char *what = "";
    switch (c->validation) {
    case 1: a.q.data = NULL; want = FA4_ERR_INVALID_ARGUMENT; what = "q.data NULL"; break;
    case 2: a.q.dtype = FA4_DTYPE_FP16; want = FA4_ERR_DTYPE; what = "q dtype fp16 on a bf16 kernel"; break;
    case 3: a.q.data = (char *)a.q.data + 2; want = FA4_ERR_ALIGNMENT; what = "q misaligned by 2 bytes"; break;
    case 4: a.v.shape[3] = c->dv + 8; want = FA4_ERR_SHAPE; what = "v head dim wrong"; break;
    case 5: a.num_aux = 0; want = FA4_ERR_AUX; what = "aux missing"; break;
    case 6:
        memcpy(aux2, a.aux, sizeof(fa4_aux_value));
        aux2[0].dtype = FA4_DTYPE_INT32;
        a.aux = aux2;
        want = FA4_ERR_AUX;
        what = "aux dtype wrong";
        break;
    case 7: b.workspace_size = 1; bwd = 1; want = FA4_ERR_WORKSPACE; what = "workspace too small"; break;
    default: {
        memset(&bm, 0, sizeof bm);
        bm.struct_size = sizeof bm;
        bm.batch = 1;
        bm.heads = 1;
        bm.q_block = 64;
        bm.kv_block = 64;
        bm.num_q_blocks = (c->sq + 63) / 64;
        bm.num_kv_blocks = (c->skv + 63) / 64;
        bm.kv_num_blocks = bm.kv_indices = (const int32_t *)a.lse.data; /* any device pointer */
        a.block_mask = &bm;
        want = FA4_ERR_UNSUPPORTED;
        what = "block mask q_block 64 on the sm80 path (needs multiples of 128)";
        break;
    }
    }
    got = bwd ? fa4_launch_bwd(kv->k, &b) : fa4_launch_fwd(kv->k, &a);
    CK(g_cu->ctxSynchronize());
    const int untouched = all_poison(O->ptr, O->bytes);
    res->pass = got == want && untouched;
    snprintf(res->note, sizeof res->note, "%s -> %s%s", what, fa4_status_name(got),
             untouched ? "" : " (output was written!)");
    return 0;
}

static void run_case(tcase *c, case_out *res)
{
    memset(res, 0, sizeof *res);
    res->determ_ok = -1;
    res->bm_ok = -1;
    kvariant *kv = &g_kv[variant_index(c->mod, c->dtype, c->d, c->dv)];
    if (kv->st != FA4_OK || !kv->k) {
        snprintf(res->note, sizeof res->note, "compile failed: %.150s", kv->err);
        return;
    }
    rng r = {c->seed};
    const int B = c->batch;
    int *qlen = malloc(sizeof(int) * B), *klen = malloc(sizeof(int) * B);
    int *qbase = malloc(sizeof(int) * (B + 1)), *kbase = malloc(sizeof(int) * (B + 1));
    int maxq = 0, maxk = 0;
    qbase[0] = kbase[0] = 0;
    for (int b = 0; b < B; b++) {
        qlen[b] = c->varlen ? rng_int(&r, 1, c->sq) : c->sq;
        klen[b] = c->varlen ? rng_int(&r, 1, c->skv) : c->skv;
        qbase[b + 1] = qbase[b] + qlen[b];
        kbase[b + 1] = kbase[b] + klen[b];
        maxq = qlen[b] > maxq ? qlen[b] : maxq;
        maxk = klen[b] > maxk ? klen[b] : maxk;
    }
    const int64_t tq = qbase[B], tk = kbase[B];
    const int64_t sfq = c->varlen ? tq : c->sq, sfk = c->varlen ? tk : c->skv;
    const int dt = c->dtype;

    dtensor Q, K, V, O, dO, dQ, dK, dV;
    make_tensor(&Q, c, dt, c->hq, tq, sfq, c->d);
    make_tensor(&K, c, dt, c->hkv, tk, sfk, c->d);
    make_tensor(&V, c, dt, c->hkv, tk, sfk, c->dv);
    make_tensor(&O, c, dt, c->hq, tq, sfq, c->dv);
    make_tensor(&dO, c, dt, c->hq, tq, sfq, c->dv);
    make_tensor(&dQ, c, dt, c->hq, tq, sfq, c->d);
    make_tensor(&dK, c, dt, c->hkv, tk, sfk, c->d);
    make_tensor(&dV, c, dt, c->hkv, tk, sfk, c->dv);
    double *hq_ = upload_random(&Q, dt, tq, &r, 1.0);
    double *hk_ = upload_random(&K, dt, tk, &r, 1.0);
    double *hv_ = upload_random(&V, dt, tk, &r, 1.0);
    double *hdo = upload_random(&dO, dt, tq, &r, 1.0);
    CUdeviceptr lse, cuq = 0, cuk = 0;
    const size_t lse_n = (size_t)c->hq * tq;
    CK(g_cu->memAlloc(&lse, lse_n * 4));
    CK(g_cu->memsetD8Async(lse, 0xff, lse_n * 4, NULL));
    if (c->varlen) {
        CK(g_cu->memAlloc(&cuq, (size_t)(B + 1) * 4));
        CK(g_cu->memAlloc(&cuk, (size_t)(B + 1) * 4));
        CK(g_cu->memcpyHtoD(cuq, qbase, (size_t)(B + 1) * 4));
        CK(g_cu->memcpyHtoD(cuk, kbase, (size_t)(B + 1) * 4));
    }
    aux_set aux;
    make_aux(&aux, c, &r, (c->sq > c->skv ? c->sq : c->skv) + c->q_off + c->kv_off + 8);
    bmask bm;
    memset(&bm, 0, sizeof bm);
    int have_bm = 0;
    if (c->bm == BM_RANDOM) {
        bm_random(&bm, c, &r);
        have_bm = 1;
    } else if (c->bm == BM_GPU) {
        fa4_status st = bm_gpu(&bm, c, kv->k, kv->m, &aux);
        if (st != FA4_OK) {
            snprintf(res->note, sizeof res->note, "block_mask_create: %s %.120s", fa4_status_name(st),
                     fa4_ctx_errmsg(g_ctx));
            goto out;
        }
        res->bm_ok = bm.ok;
        have_bm = 1;
    }

    fa4_fwd_args fa;
    fa4_fwd_args_init(&fa);
    fa.q = Q.t;
    fa.k = K.t;
    fa.v = V.t;
    fa.o = O.t;
    fa.lse = lse_tensor(lse, c->varlen ? 1 : B, c->hq, sfq);
    fa.aux = aux.dev;
    fa.num_aux = aux.n;
    fa.block_mask = have_bm ? &bm.bm : NULL;
    if (c->varlen) {
        fa.cu_seqlens_q = (const int32_t *)(uintptr_t)cuq;
        fa.cu_seqlens_k = (const int32_t *)(uintptr_t)cuk;
        fa.num_seqs = B;
        fa.max_seqlen_q = maxq;
        fa.max_seqlen_k = maxk;
    }
    fa.q_offset = c->q_off;
    fa.kv_offset = c->kv_off;

    fa4_bwd_args ba;
    fa4_bwd_args_init(&ba);
    ba.q = Q.t;
    ba.k = K.t;
    ba.v = V.t;
    ba.o = O.t;
    ba.dout = dO.t;
    ba.lse = fa.lse;
    ba.dq = dQ.t;
    ba.dk = dK.t;
    ba.dv = dV.t;
    ba.aux = aux.dev;
    ba.num_aux = aux.n;
    ba.block_mask = fa.block_mask;
    ba.cu_seqlens_q = fa.cu_seqlens_q;
    ba.cu_seqlens_k = fa.cu_seqlens_k;
    ba.num_seqs = fa.num_seqs;
    ba.max_seqlen_q = fa.max_seqlen_q;
    ba.max_seqlen_k = fa.max_seqlen_k;
    ba.q_offset = c->q_off;
    ba.kv_offset = c->kv_off;
    ba.deterministic = c->determ;

    if (c->validation) {
        ba.workspace = (void *)(uintptr_t)lse;
        ba.workspace_size = 1 << 20;
        run_validation(c, kv, &fa, &ba, &O, res);
        goto out;
    }

    fa4_status st = fa4_launch_fwd(kv->k, &fa);
    if (st != FA4_OK) {
        snprintf(res->note, sizeof res->note, "launch_fwd: %s %.150s", fa4_status_name(st), fa4_ctx_errmsg(g_ctx));
        goto out;
    }
    CK(g_cu->ctxSynchronize());

    CUdeviceptr ws = 0;
    size_t ws_bytes = 0;
    unsigned char *first[3] = {NULL, NULL, NULL};
    if (c->bwd) {
        st = fa4_bwd_workspace_size(kv->k, &ba, &ws_bytes);
        if (st == FA4_OK) {
            CK(g_cu->memAlloc(&ws, ws_bytes + 256));
            ba.workspace = (void *)(uintptr_t)((ws + 255) & ~(CUdeviceptr)255);
            ba.workspace_size = ws_bytes;
            for (int run = 0; run < (c->determ ? 2 : 1) && st == FA4_OK; run++) {
                CK(g_cu->memsetD8Async(dQ.ptr, 0xff, dQ.bytes, NULL));
                CK(g_cu->memsetD8Async(dK.ptr, 0xff, dK.bytes, NULL));
                CK(g_cu->memsetD8Async(dV.ptr, 0xff, dV.bytes, NULL));
                if (aux.grad)
                    CK(g_cu->memsetD8Async(aux.grad, 0, aux.grad_numel * 4, NULL));
                st = fa4_launch_bwd(kv->k, &ba);
                CK(g_cu->ctxSynchronize());
                if (c->determ && st == FA4_OK) {
                    dtensor *ts[3] = {&dQ, &dK, &dV};
                    for (int i = 0; i < 3; i++) {
                        unsigned char *bytes = malloc(ts[i]->bytes);
                        CK(g_cu->memcpyDtoH(bytes, ts[i]->ptr, ts[i]->bytes));
                        if (run == 0)
                            first[i] = bytes;
                        else {
                            if (res->determ_ok < 0)
                                res->determ_ok = 1;
                            if (memcmp(bytes, first[i], ts[i]->bytes))
                                res->determ_ok = 0;
                            free(bytes);
                        }
                    }
                }
            }
        }
        if (st != FA4_OK) {
            snprintf(res->note, sizeof res->note, "launch_bwd: %s %.150s", fa4_status_name(st),
                     fa4_ctx_errmsg(g_ctx));
            goto out_ws;
        }
    }

    /* reference */
    {
        ref_problem rp;
        memset(&rp, 0, sizeof rp);
        rp.mod = kv->m;
        rp.aux = aux.host;
        rp.num_aux = aux.n;
        rp.batch = B;
        rp.hq = c->hq;
        rp.hkv = c->hkv;
        rp.d = c->d;
        rp.dv = c->dv;
        rp.tq = tq;
        rp.tk = tk;
        rp.qbase = qbase;
        rp.qlen = qlen;
        rp.kbase = kbase;
        rp.klen = klen;
        rp.scale = (double)(1.0f / sqrtf((float)c->d));
        rp.q_offset = c->q_off;
        rp.kv_offset = c->kv_off;
        if (have_bm) {
            rp.bm_status = bm.status;
            rp.bm_batch = bm.bm.batch;
            rp.bm_heads = bm.bm.heads;
            rp.bm_q_block = bm.bm.q_block;
            rp.bm_kv_block = bm.bm.kv_block;
            rp.bm_nq = bm.bm.num_q_blocks;
            rp.bm_nkv = bm.bm.num_kv_blocks;
        }
        rp.q = hq_;
        rp.k = hk_;
        rp.v = hv_;
        rp.dout = hdo;
        rp.trainable_aux = aux.grad ? 0 : -1;
        rp.trainable_numel = aux.grad_numel;
        rp.trainable_index = aux.grad ? relbias_index : NULL;
        ref_result rr;
        if (ref_attention(&rp, c->bwd, &rr, g_threads) != 0)
            snprintf(res->note, sizeof res->note, "CPU evaluator failed");

        double *o = download(&O, dt, tq);
        res->e[0] = compare(o, rr.o, (size_t)c->hq * tq * c->dv);
        res->have[0] = 1;
        free(o);
        float *lf = malloc(lse_n * 4);
        double *ld = malloc(lse_n * 8);
        CK(g_cu->memcpyDtoH(lf, lse, lse_n * 4));
        for (int h = 0; h < c->hq; h++)
            for (int64_t i = 0; i < tq; i++)
                ld[(size_t)h * tq + i] = c->varlen ? lf[(size_t)h * tq + i]
                                                   : lf[((size_t)(i / c->sq) * c->hq + h) * c->sq + i % c->sq];
        res->e[1] = compare(ld, rr.lse, lse_n);
        res->have[1] = 1;
        free(lf);
        free(ld);
        if (c->bwd) {
            double *x = download(&dQ, dt, tq);
            res->e[2] = compare(x, rr.dq, (size_t)c->hq * tq * c->d);
            free(x);
            x = download(&dK, dt, tk);
            res->e[3] = compare(x, rr.dk, (size_t)c->hkv * tk * c->d);
            free(x);
            x = download(&dV, dt, tk);
            res->e[4] = compare(x, rr.dv, (size_t)c->hkv * tk * c->dv);
            free(x);
            res->have[2] = res->have[3] = res->have[4] = 1;
            if (aux.grad) {
                float *gf = malloc(aux.grad_numel * 4);
                double *gd = malloc(aux.grad_numel * 8);
                CK(g_cu->memcpyDtoH(gf, aux.grad, aux.grad_numel * 4));
                for (int64_t i = 0; i < aux.grad_numel; i++)
                    gd[i] = gf[i];
                res->e[5] = compare(gd, rr.daux, aux.grad_numel);
                res->have[5] = 1;
                free(gf);
                free(gd);
            }
        }
        ref_result_free(&rr);
        const double tol = dt == FA4_DTYPE_BF16 ? 1e-2 : 5e-3;
        res->pass = res->note[0] == 0;
        for (int i = 0; i < 6; i++) {
            if (!res->have[i])
                continue;
            if (res->e[i].bad)
                res->pass = 0;
            if (i == 1 ? res->e[i].maxabs > 5e-3 : res->e[i].rel > tol)
                res->pass = 0;
        }
        if (res->determ_ok == 0 || res->bm_ok == 0)
            res->pass = 0;
    }
out_ws:
    for (int i = 0; i < 3; i++)
        free(first[i]);
    if (ws)
        g_cu->memFree(ws);
out:
    bm_free(&bm);
    free_aux(&aux);
    dtensor *all[8] = {&Q, &K, &V, &O, &dO, &dQ, &dK, &dV};
    for (int i = 0; i < 8; i++)
        free_tensor(all[i]);
    g_cu->memFree(lse);
    if (cuq)
        g_cu->memFree(cuq);
    if (cuk)
        g_cu->memFree(cuk);
    free(hq_);
    free(hk_);
    free(hv_);
    free(hdo);
    free(qlen);
    free(klen);
    free(qbase);
    free(kbase);
}

/* --------------------------------------------------------------------------- features */
typedef struct feature {
    char name[32];
    int n, pass;
    double worst;
} feature;
static feature g_feat[64];
static int g_nfeat;

static void feat_add(const char *name, int pass, double worst)
{
    int i;
    for (i = 0; i < g_nfeat; i++)
        if (!strcmp(g_feat[i].name, name))
            break;
    if (i == g_nfeat) {
        if (g_nfeat == 64)
            return;
        snprintf(g_feat[g_nfeat++].name, 32, "%s", name);
    }
    g_feat[i].n++;
    g_feat[i].pass += pass;
    if (worst > g_feat[i].worst)
        g_feat[i].worst = worst;
}

static void case_tags(tcase *c)
{
    char *t = c->tags;
    size_t n = sizeof c->tags;
    int w = snprintf(t, n, "%s d%d%s%s %s %s", c->dtype == FA4_DTYPE_BF16 ? "bf16" : "fp16", c->d,
                     c->dv != c->d ? "/" : "", "", mods[c->mod].name, layout_names[c->layout]);
    if (c->dv != c->d)
        w = snprintf(t, n, "%s d%d/%d %s %s", c->dtype == FA4_DTYPE_BF16 ? "bf16" : "fp16", c->d, c->dv,
                     mods[c->mod].name, layout_names[c->layout]);
#define TAG(cond, s)                                                                               \
    if ((cond) && w < (int)n)                                                                      \
        w += snprintf(t + w, n - (size_t)w, " %s", s);
    TAG(c->hq > c->hkv && c->hkv > 1, "gqa");
    TAG(c->hkv == 1 && c->hq > 1, "mqa");
    TAG(c->varlen, "varlen");
    TAG(c->bm == BM_GPU, "bm-gpu");
    TAG(c->bm == BM_RANDOM, "bm-random");
    TAG(c->q_off || c->kv_off, "offsets");
    TAG(c->kv_off > c->q_off && mods[c->mod].has_mask, "empty-rows");
    TAG(c->determ, "deterministic");
    TAG(c->mod == M_RELBIAS, "trainable-aux");
    TAG(c->validation, "validation");
#undef TAG
}

/* ------------------------------------------------------------------------------ bench */
static void bench(int mod, const char *label, int causal_bm)
{
    tcase c;
    memset(&c, 0, sizeof c);
    c.mod = mod;
    c.dtype = FA4_DTYPE_BF16;
    c.d = c.dv = 128;
    c.batch = 4;
    c.hq = c.hkv = 16;
    c.sq = c.skv = 4096;
    c.layout = L_BHSD;
    kvariant *kv = &g_kv[variant_index(mod, c.dtype, 128, 128)];
    if (kv->st != FA4_OK || !kv->k) {
        printf("bench %s: kernel not compiled\n", label);
        return;
    }
    rng r = {7};
    const int64_t t = (int64_t)c.batch * c.sq;
    dtensor Q, K, V, O, dO, dQ, dK, dV;
    make_tensor(&Q, &c, c.dtype, c.hq, t, c.sq, 128);
    make_tensor(&K, &c, c.dtype, c.hkv, t, c.sq, 128);
    make_tensor(&V, &c, c.dtype, c.hkv, t, c.sq, 128);
    make_tensor(&O, &c, c.dtype, c.hq, t, c.sq, 128);
    make_tensor(&dO, &c, c.dtype, c.hq, t, c.sq, 128);
    make_tensor(&dQ, &c, c.dtype, c.hq, t, c.sq, 128);
    make_tensor(&dK, &c, c.dtype, c.hkv, t, c.sq, 128);
    make_tensor(&dV, &c, c.dtype, c.hkv, t, c.sq, 128);
    free(upload_random(&Q, c.dtype, t, &r, 1.0));
    free(upload_random(&K, c.dtype, t, &r, 1.0));
    free(upload_random(&V, c.dtype, t, &r, 1.0));
    free(upload_random(&dO, c.dtype, t, &r, 1.0));
    CUdeviceptr lse;
    CK(g_cu->memAlloc(&lse, (size_t)c.hq * t * 4));
    bmask bm;
    memset(&bm, 0, sizeof bm);
    aux_set aux;
    memset(&aux, 0, sizeof aux);
    if (causal_bm) {
        c.q_block = c.kv_block = 128;
        c.bm_heads1 = 1;
        c.batch = 1; /* the mask is the same for every batch entry: broadcast */
        fa4_status st = bm_gpu(&bm, &c, kv->k, kv->m, &aux);
        c.batch = 4;
        bm.bm.batch = 1;
        if (st != FA4_OK) {
            printf("bench %s: block mask failed\n", label);
            return;
        }
    }
    fa4_fwd_args fa;
    fa4_fwd_args_init(&fa);
    fa.q = Q.t;
    fa.k = K.t;
    fa.v = V.t;
    fa.o = O.t;
    fa.lse = lse_tensor(lse, c.batch, c.hq, c.sq);
    fa.block_mask = causal_bm ? &bm.bm : NULL;
    fa4_bwd_args ba;
    fa4_bwd_args_init(&ba);
    ba.q = Q.t;
    ba.k = K.t;
    ba.v = V.t;
    ba.o = O.t;
    ba.dout = dO.t;
    ba.lse = fa.lse;
    ba.dq = dQ.t;
    ba.dk = dK.t;
    ba.dv = dV.t;
    ba.block_mask = fa.block_mask;
    size_t ws_bytes = 0;
    CUdeviceptr ws = 0;
    fa4_bwd_workspace_size(kv->k, &ba, &ws_bytes);
    CK(g_cu->memAlloc(&ws, ws_bytes));
    ba.workspace = (void *)(uintptr_t)ws;
    ba.workspace_size = ws_bytes;
    double tf[2] = {0, 0}, med_ms[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        double ms[15];
        const int n = 11;
        for (int i = 0; i < n + 1; i++) {
            CK(g_cu->ctxSynchronize());
            const double t0 = now_ms();
            fa4_status st = pass == 0 ? fa4_launch_fwd(kv->k, &fa) : fa4_launch_bwd(kv->k, &ba);
            CK(g_cu->ctxSynchronize());
            if (st != FA4_OK) {
                printf("bench %s: launch failed: %s\n", label, fa4_ctx_errmsg(g_ctx));
                return;
            }
            if (i > 0)
                ms[i - 1] = now_ms() - t0;
        }
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (ms[j] < ms[i]) {
                    double x = ms[i];
                    ms[i] = ms[j];
                    ms[j] = x;
                }
        med_ms[pass] = ms[n / 2];
        double flops = 4.0 * c.batch * c.hq * (double)c.sq * c.skv * 128 * (causal_bm ? 0.5 : 1.0);
        if (pass == 1)
            flops *= 2.5;
        tf[pass] = flops / (med_ms[pass] * 1e-3) / 1e12;
    }
    printf("BENCH %-22s B=%d H=%d S=%d D=128 bf16: fwd %.3f ms %.1f TFLOP/s | bwd %.3f ms %.1f TFLOP/s | "
           "fwd+bwd %.1f TFLOP/s\n",
           label, c.batch, c.hq, c.sq, med_ms[0], tf[0], med_ms[1], tf[1],
           3.5 * 4.0 * c.batch * c.hq * (double)c.sq * c.skv * 128 * (causal_bm ? 0.5 : 1.0) /
               ((med_ms[0] + med_ms[1]) * 1e-3) / 1e12);
    dtensor *all[8] = {&Q, &K, &V, &O, &dO, &dQ, &dK, &dV};
    for (int i = 0; i < 8; i++)
        free_tensor(all[i]);
    g_cu->memFree(lse);
    g_cu->memFree(ws);
    bm_free(&bm);
}

/* Tag the cases, keep those matching the filter (at most max_cases), register their kernels. */
static void select_cases(const char *filter, int max_cases)
{
    int n = 0;
    for (int i = 0; i < g_ncases; i++) {
        tcase *c = &g_cases[i];
        case_tags(c);
        if ((filter && !strstr(c->tags, filter)) || n >= max_cases)
            continue;
        g_cases[n++] = *c;
        variant_index(c->mod, c->dtype, c->d, c->dv);
    }
    g_ncases = n;
}

/* ------------------------------------------------------------------------------- main */
int main(int argc, char **argv)
{
    int quick = 0, bench_only = 0, no_bench = 0, max_cases = 1 << 30;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--bench-only"))
            bench_only = 1;
        else if (!strcmp(argv[i], "--no-bench"))
            no_bench = 1;
        else if (!strcmp(argv[i], "--verbose"))
            g_verbose = 1;
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else if (!strcmp(argv[i], "--max-cases") && i + 1 < argc)
            max_cases = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--deviceless") && i + 1 < argc)
            g_arch = argv[++i];
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (g_arch) { /* compile every variant for g_arch without a GPU: resource report only */
        fa4_ctx_options o;
        fa4_ctx_options_init(&o);
        o.device = FA4_DEVICE_NONE;
        o.cache_mode = FA4_CACHE_MODE_OFF;
        if (fa4_ctx_create(&o, &g_ctx) != FA4_OK) {
            printf("FAIL: deviceless ctx: %s\n", fa4_ctx_create_errmsg());
            return 1;
        }
        long np = sysconf(_SC_NPROCESSORS_ONLN);
        g_threads = np > 1 ? (int)np : 1;
        make_cases(quick);
        select_cases(filter, max_cases);
        const int bad = compile_all();
        printf("%s: %d variants, %d with failures, spills or warnings\n", g_arch, g_nkv, bad);
        fa4_ctx_destroy(g_ctx);
        return bad ? 1 : 0;
    }
    const char *why = NULL;
    g_cu = fa4__cu_get(&why);
    if (!g_cu) {
        printf("SKIP: no CUDA driver (%s)\n", why ? why : "?");
        return 0;
    }
    int ndev = 0;
    if (g_cu->deviceGetCount(&ndev) != CUDA_SUCCESS || ndev == 0) {
        printf("SKIP: no CUDA device\n");
        return 0;
    }
    fa4_ctx_options opts;
    fa4_ctx_options_init(&opts);
    opts.device = 0;
    opts.cache_mode = FA4_CACHE_MODE_OFF;
    fa4_status st = fa4_ctx_create(&opts, &g_ctx);
    if (st == FA4_ERR_NO_DRIVER || st == FA4_ERR_NO_DEVICE) {
        printf("SKIP: %s (%s)\n", fa4_status_name(st), fa4_ctx_create_errmsg());
        return 0;
    }
    if (st != FA4_OK) {
        printf("FAIL: fa4_ctx_create: %s %s\n", fa4_status_name(st), fa4_ctx_create_errmsg());
        return 1;
    }
    CUdevice dev;
    CUcontext cctx;
    char name[128] = "";
    CK(g_cu->deviceGet(&dev, 0));
    CK(g_cu->devicePrimaryCtxRetain(&cctx, dev));
    CK(g_cu->ctxPushCurrent(cctx));
    g_cu->deviceGetName(name, sizeof name, dev);
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    g_threads = nproc > 1 ? (int)nproc : 1;
    printf("device: %s (%s), %d CPU threads\n", name, fa4_ctx_arch(g_ctx), g_threads);

    if (!bench_only) {
        make_cases(quick);
        select_cases(filter, max_cases);
    }
    if (!no_bench) {
        variant_index(M_NONE, FA4_DTYPE_BF16, 128, 128);
        variant_index(M_CAUSAL, FA4_DTYPE_BF16, 128, 128);
    }
    compile_all();

    int npass = 0, nrun = 0;
    if (!bench_only) {
        printf("\n%-4s %-58s %-22s %-22s %-22s %-22s %-22s %-10s %s\n", "case", "features", "O rel/max",
               "LSE max", "dQ rel", "dK rel", "dV rel", "dAux rel", "result");
        for (int i = 0; i < g_ncases; i++) {
            tcase *c = &g_cases[i];
            case_out res;
            const double t0 = now_ms();
            run_case(c, &res);
            const double dt_ms = now_ms() - t0;
            nrun++;
            npass += res.pass;
            char cols[6][40];
            double worst = 0;
            for (int k = 0; k < 6; k++) {
                if (!res.have[k]) {
                    snprintf(cols[k], 40, "-");
                    continue;
                }
                if (k == 1)
                    snprintf(cols[k], 40, "%.2e%s", res.e[k].maxabs, res.e[k].bad ? " BAD" : "");
                else
                    snprintf(cols[k], 40, "%.2e/%.1e%s", res.e[k].rel, res.e[k].maxabs,
                             res.e[k].bad ? " NAN" : "");
                if (k != 1 && res.e[k].rel > worst)
                    worst = res.e[k].rel;
            }
            char sizes[64];
            snprintf(sizes, sizeof sizes, " B%d H%d/%d S%d/%d", c->batch, c->hq, c->hkv, c->sq, c->skv);
            char feat[400];
            snprintf(feat, sizeof feat, "%s%s", c->tags, sizes);
            printf("%-4d %-58s %-22s %-22s %-22s %-22s %-22s %-10s %s%s%s%s %.0fms\n", i, feat, cols[0],
                   cols[1], cols[2], cols[3], cols[4], cols[5], res.pass ? "PASS" : "FAIL",
                   res.determ_ok == 1 ? " bitwise-equal" : (res.determ_ok == 0 ? " NOT-BITWISE" : ""),
                   res.bm_ok == 1 ? " bm-lists-ok" : (res.bm_ok == 0 ? " BM-LISTS-DIFFER" : ""),
                   res.note[0] ? " " : "", dt_ms);
            if (res.note[0])
                printf("     note: %s\n", res.note);
            /* features */
            char tmp[256];
            snprintf(tmp, sizeof tmp, "%s", c->tags);
            for (char *tok = strtok(tmp, " "); tok; tok = strtok(NULL, " "))
                feat_add(tok, res.pass, worst);
            if (c->bwd && !c->validation)
                feat_add("backward", res.pass, worst);
            feat_add("all", res.pass, worst);
        }
        printf("\nSUMMARY per feature (cases, passed, worst relative L2 error over O/dQ/dK/dV/dAux)\n");
        printf("%-16s %6s %6s %10s\n", "feature", "cases", "passed", "worst");
        for (int i = 0; i < g_nfeat; i++)
            printf("%-16s %6d %6d %10.2e\n", g_feat[i].name, g_feat[i].n, g_feat[i].pass, g_feat[i].worst);
        printf("\nTOTAL: %d/%d cases passed\n", npass, nrun);
    }
    if (!no_bench) {
        bench(M_NONE, "plain", 0);
        bench(M_CAUSAL, "causal (block mask)", 1);
    }
    for (int i = 0; i < g_nkv; i++) {
        fa4_kernel_destroy(g_kv[i].k);
        fa4__mod_free(g_kv[i].m);
    }
    fa4_ctx_destroy(g_ctx);
    return npass == nrun ? 0 : 1;
}
