/*
 * test_sm80.c - the GPU test suite of the sm80 kernel path. Compiles every mod/dtype/head-dim
 * variant the cases need (in parallel), then runs each case on random inputs against the float64
 * reference of ref.c: forward O and LSE, backward dQ, dK, dV and trainable aux gradients, with
 * every output poisoned (NaN) first so an unwritten element fails. Also: block masks created on
 * the GPU compared list by list with the CPU, deterministic backward compared bitwise across two
 * runs, launch validation, and a timing of the benchmark shape. Prints a table, then a summary per
 * feature (cases, passes, worst error). Exits 0 with "SKIP: <why>" where there is no GPU.
 *
 * Usage: test_gpu_sm80 [--quick] [--bench-only] [--no-bench] [--filter SUBSTR[|SUBSTR...]] [--max-cases N] [--case N]
 *                      [--deviceless ARCH]   (compile only, resource report; no GPU needed)
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

const fa4__cu *g_cu;
fa4_ctx *g_ctx;
int g_threads = 4;
/* Which kernel path the suite tests: FA4_TEST_PATH=sm80 (the default), sm90 or auto. The backward
 * and block-mask programs of the sm90 path are the sm80 ones, so the whole suite applies. */
static int test_path(void)
{
    const char *e = getenv("FA4_TEST_PATH");
    if (e && !strcmp(e, "sm90"))
        return FA4_PATH_SM90;
    if (e && !strcmp(e, "auto"))
        return FA4_PATH_AUTO;
    return FA4_PATH_SM80;
}

static int g_verbose = 0;

/* ------------------------------------------------------------------------------------ mods */

/* mods/t5_bias.mod (32 buckets, max distance 128 at launch) */
#define T5_MOD_SRC \
     "int t5_bucket(int rel, int num_buckets, int max_distance) {\n" \
     "    int half_buckets = num_buckets / 2;\n    int bucket = 0;\n" \
     "    if (rel > 0) {\n        bucket = half_buckets;\n    }\n" \
     "    int n = abs(rel);\n    int max_exact = half_buckets / 2;\n" \
     "    if (n < max_exact) {\n        return bucket + n;\n    }\n" \
     "    float scaled = logf((float)n / (float)max_exact) / logf((float)max_distance / (float)max_exact);\n" \
     "    int large = max_exact + (int)(scaled * (float)(half_buckets - max_exact));\n" \
     "    return bucket + min(large, half_buckets - 1);\n}\n" \
     "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias,\n" \
     "                int num_buckets, int max_distance) {\n" \
     "    return score + bias[h * num_buckets + t5_bucket(kv_idx - q_idx, num_buckets, max_distance)];\n}\n"

const mod_def mods[M_ALL] = {
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
    {"doc_causal",
     "bool mask_mod(int b, int h, int q_idx, int kv_idx, const int32 *doc_id) {\n"
     "    return doc_id[q_idx] == doc_id[kv_idx] && q_idx >= kv_idx;\n}\n",
     NULL, 1},
    {"prefix_lm",
     "bool mask_mod(int b, int h, int q_idx, int kv_idx, const int32 *prefix_len) {\n"
     "    return kv_idx < prefix_len[b] || q_idx >= kv_idx;\n}\n",
     NULL, 1},
    /* 16 entries per position of kv_idx - q_idx: a CTA's 128 keys against a few hundred queries
     * read more of it than the sm90 backward's window holds (the rest of its gradient goes to
     * global atomics) */
    {"widebias",
     "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias) {\n"
     "    return score + bias[clamp(16 * (kv_idx - q_idx) + 12000, 0, 23999)];\n}\n",
     "bias", 0},
    /* mods/t5_bias.mod: a helper, logf, divisions, a clamp and a gather (the sm90 forward's
     * relative-form table, softmax.cuh) */
    {"t5", T5_MOD_SRC, NULL, 0},
    /* the same with its table trainable (the sm90 backward's grads_rel) */
    {"t5_train", T5_MOD_SRC, "bias", 0},
};

int64_t widebias_index(int h, int q_idx, int kv_idx)
{
    (void)h;
    int e = 16 * (kv_idx - q_idx) + 12000;
    return e < 0 ? 0 : (e > WIDEBIAS_NUMEL - 1 ? WIDEBIAS_NUMEL - 1 : e);
}

int64_t relbias_index(int h, int q_idx, int kv_idx)
{
    (void)h;
    int e = kv_idx - q_idx + 256;
    return e < 0 ? 0 : (e > 511 ? 511 : e);
}

/* mods/t5_bias.mod's index (32 buckets, max distance 128) as the CPU evaluator computes it, in
 * double (a float log gives the same buckets for every distance: checked for 8 <= n < 200) */
int64_t t5_index(int h, int q_idx, int kv_idx)
{
    const int rel = kv_idx - q_idx, n = rel < 0 ? -rel : rel;
    const int bucket = rel > 0 ? 16 : 0;
    if (n < 8)
        return (int64_t)h * 32 + bucket + n;
    const int large = 8 + (int)(log((double)n / 8.0) / log(128.0 / 8.0) * 8.0);
    return (int64_t)h * 32 + bucket + (large < 15 ? large : 15);
}

/* --------------------------------------------------------------------------------- kernels */

kvariant g_kv[128];
int g_nkv;

int variant_index(int mod, int dtype, int d, int dv, int checked, int nogqa)
{
    for (int i = 0; i < g_nkv; i++)
        if (g_kv[i].mod == mod && g_kv[i].dtype == dtype && g_kv[i].d == d && g_kv[i].dv == dv &&
            g_kv[i].checked == checked && g_kv[i].nogqa == nogqa)
            return i;
    if (g_nkv == (int)(sizeof g_kv / sizeof g_kv[0])) {
        fprintf(stderr, "too many kernel variants\n");
        exit(2);
    }
    g_kv[g_nkv] = (kvariant){mod, dtype, d, dv, checked, nogqa, NULL, NULL, FA4_OK, "", 0};
    return g_nkv++;
}

double now_ms(void)
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
        spec.path = test_path();
        spec.arch = g_arch;
        spec.flags = FA4_COMPILE_FWD | FA4_COMPILE_BWD | (mods[v->mod].has_mask ? FA4_COMPILE_BLOCK_MASK : 0) |
                     (v->checked ? FA4_COMPILE_CHECKED : 0) |
                     (mods[v->mod].trainable ? FA4_COMPILE_DETERMINISTIC : 0) | (v->nogqa ? 0 : FA4_COMPILE_GQA);
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
                /* the path's frame_tolerance (path_sm90.c: bwd_main90 keeps level 0 up to a 192-byte frame) */
                const int spilled = info.programs[p].spill_stores + info.programs[p].spill_loads;
                if (spilled > 0 && info.programs[p].stack_frame > fa4__frame_tolerance(info.path, info.programs[p].name))
                    bad++;
            }
        printf("\n");
    }
    return bad;
}

static const char *layout_names[L_COUNT] = {"bhsd", "bshd", "padded"};
/* ----------------------------------------------------------------------------------- cases */


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
    /* aux tensors shorter than the indices read: release builds clamp, forward and gradient */
    for (int k = 0; k < (quick ? 1 : 4); k++) {
        tcase c = random_case(&r, M_RELBIAS, dtypes[k % 2], k % 2 ? 64 : 128, k % 2 ? 64 : 128);
        c.aux_small = 1;
        c.sq = rng_int(&r, 200, 400);
        c.skv = rng_int(&r, 200, 400);
        add_case(c);
    }
    /* checked builds (aux reads trap when out of range) with in-range reads: results as unchecked */
    const int cmods[3] = {M_RELBIAS, M_ALIBI_CAUSAL, M_DOCUMENT};
    for (int k = 0; k < (quick ? 1 : 3); k++) {
        tcase c = random_case(&r, cmods[k], FA4_DTYPE_BF16, 64, 64);
        c.checked = 1;
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
    /* T: the softmax scale other than 1 / sqrt(D): negative (the sm90 forward's row max is taken on
     * the raw scores and multiplied by the scale, and its folded tile form (FA4_SM90_TILE_FOLD) is
     * only taken for a positive scale) and large, for plain attention, a mask_mod, ALiBi (the folded
     * affine form: not taken for a factor <= 0), the trainable relative bias (its tile form away
     * from the diagonal: rows and keys past its max_dist) and T5, forward and backward; then a
     * mask_mod at a negative scale and plain attention at a large one (session 26: the mod-free
     * forward gave NaN for a negative scale; cases 6 and 7 come after the first six so that those
     * keep their shapes) */
    {
        rng rt = {4242}; /* its own generator: the groups after it keep their cases */
        static const int tmods[8] = {M_NONE, M_CAUSAL, M_ALIBI, M_RELBIAS, M_T5, M_RELBIAS, M_CAUSAL, M_NONE};
        for (int k = 0; k < (quick ? 3 : 8); k++) {
            const int d = k % 3 == 1 ? 64 : 128;
            tcase c = random_case(&rt, tmods[quick ? 2 * k + 1 : k], k % 2 ? FA4_DTYPE_FP16 : FA4_DTYPE_BF16, d, d);
            c.sq = rng_int(&rt, 300, 700);
            c.skv = rng_int(&rt, 300, 700);
            c.scale = (k % 2 ? 2.5 : -0.8) / sqrt((double)d);
            add_case(c);
        }
    }
    /* G: launch validation */
    for (int k = 1; k <= 9; k++) {
        tcase c = random_case(&r, M_ALIBI, FA4_DTYPE_BF16, 128, 128);
        c.validation = k;
        c.sq = 64;
        c.skv = 64;
        add_case(c);
    }
    /* H: deterministic with block masks (on sm90 dQ in turns from a walk table of the transposed
     * lists: prefix-shaped, banded, block-diagonal and random lists, kv blocks of 1 and 2 key
     * tiles); a generator of its own, so the cases above stay as they were */
    rng r2 = {4242};
    const int hgmods[3] = {M_CAUSAL, M_WINDOW, M_DOCUMENT};
    const int hrmods[3] = {M_NONE, M_CAUSAL, M_ALIBI};
    for (int k = 0; k < (quick ? 3 : 6); k++) {
        tcase c = random_case(&r2, k < 3 ? hgmods[k] : hrmods[k - 3], dtypes[k % 2], k % 2 ? 64 : 128,
                              k % 2 ? 64 : 128);
        c.determ = 1;
        c.bm = k < 3 ? BM_GPU : BM_RANDOM;
        c.q_block = k < 3 && (k & 1) ? 256 : 128;
        c.kv_block = k == 2 || k == 5 ? 256 : 128;
        c.bm_heads1 = k & 1;
        c.sq = rng_int(&r2, 300, 1100);
        c.skv = rng_int(&r2, 300, 1100);
        add_case(c);
    }
    /* I: a trainable table whose indices per CTA exceed the sm90 backward's aux-gradient window
     * (partly windowed, the rest by global atomics; clamped at both ends for the longer
     * sequences), sizes not multiples of the tiles, deterministic once; generator of its own */
    rng r3 = {777};
    for (int k = 0; k < (quick ? 2 : 4); k++) {
        tcase c = random_case(&r3, M_WIDEBIAS, dtypes[k % 2], k % 2 ? 64 : 128, k % 2 ? 64 : 128);
        c.sq = rng_int(&r3, 300, 1100);
        c.skv = rng_int(&r3, 300, 1100);
        c.determ = k == 1;
        add_case(c);
    }
    /* J: padded D 256 (sm90: the bwd256 backward, 64-key CTAs, dK / dV split over the head dim):
     * sizes not multiples of its tiles, score_mod, mask_mod, GQA, varlen, offsets, block masks
     * (kv blocks of 1 and 2 key tiles), deterministic (also with block masks), a trainable table
     * (the sm80 backward);
     * generator of its own */
    rng r4 = {2560};
    static const int jmods[12] = {M_NONE,   M_CAUSAL, M_SOFTCAP, M_ALIBI,   M_NONE,  M_CAUSAL,
                                  M_WINDOW, M_ALIBI,  M_RELBIAS, M_DOCUMENT, M_CAUSAL, M_ALIBI_CAUSAL};
    for (int k = 0; k < 12; k++) {
        tcase c = random_case(&r4, jmods[k], dtypes[k % 2], 256, 256);
        c.sq = rng_int(&r4, 100, 700);
        c.skv = k == 1 ? c.sq : rng_int(&r4, 100, 700);
        if (k == 2) {
            c.hq = 4;
            c.hkv = 2;
        }
        if (k == 3 || k == 11) {
            c.varlen = 1;
            c.batch = 3;
        }
        c.determ = k == 4 || k == 5 || k == 11;
        if (k == 6 || k == 7) {
            c.bm = k == 6 ? BM_GPU : BM_RANDOM;
            c.q_block = 128;
            c.kv_block = k == 6 ? 64 : 128;
        }
        if (k == 10) {
            c.q_off = rng_int(&r4, 0, 40);
            c.kv_off = rng_int(&r4, 0, 40);
        }
        add_case(c);
    }
    /* ... deterministic with block masks (turns from the walk table of 64-key tiles: kv blocks of
     * 1, 2 and 4 key tiles) */
    static const int jbmods[3] = {M_CAUSAL, M_ALIBI, M_DOCUMENT};
    for (int k = 0; k < 3; k++) {
        tcase c = random_case(&r4, jbmods[k], dtypes[k % 2], 256, 256);
        c.determ = 1;
        c.bm = k == 1 ? BM_RANDOM : BM_GPU;
        c.q_block = k == 2 ? 256 : 128;
        c.kv_block = 64 << k;
        c.bm_heads1 = k & 1;
        c.sq = rng_int(&r4, 300, 900);
        c.skv = rng_int(&r4, 300, 900);
        add_case(c);
    }
    /* ... deterministic with GQA (the walk over the group's heads: a CTA takes several turns per
     * query tile), dense and with block masks (causal from the GPU, kv blocks of 1 key tile;
     * random lists, kv blocks of 2), sizes not multiples of the tiles; more key tiles than fit
     * one wave of 64-key CTAs where the key tiles run slowest */
    for (int k = 0; k < 4; k++) {
        tcase c = random_case(&r4, k == 1 ? M_CAUSAL : k == 2 ? M_ALIBI : M_NONE, dtypes[k % 2], 256, 256);
        c.determ = 1;
        c.hq = 4;
        c.hkv = k == 3 ? 1 : 2;
        c.sq = rng_int(&r4, 300, 900);
        c.skv = rng_int(&r4, 300, 900);
        if (k == 1 || k == 2) {
            c.bm = k == 1 ? BM_GPU : BM_RANDOM;
            c.q_block = 128;
            c.kv_block = 64 * k;
        }
        if (k == 3) { /* MQA, one batch entry: 150 key tiles of 64 */
            c.batch = 1;
            c.sq = rng_int(&r4, 40, 100); /* the float64 reference runs one thread here */
            c.skv = 149 * 64 + rng_int(&r4, 1, 63);
        }
        add_case(c);
    }
    /* K: a loss that uses the LSE too (fa4_bwd_args.dlse): plain, a mask, score_mods, varlen, a
     * block mask and deterministic; generator of its own */
    rng r5 = {9090};
    const int kmods[6] = {M_NONE, M_CAUSAL, M_ALIBI, M_SOFTCAP, M_RELBIAS, M_WINDOW};
    for (int k = 0; k < (quick ? 3 : 8); k++) {
        tcase c = random_case(&r5, kmods[k % 6], dtypes[k % 2], k % 2 ? 64 : 128, k % 2 ? 64 : 128);
        c.dlse = 1;
        c.sq = rng_int(&r5, 100, 500);
        c.skv = rng_int(&r5, 100, 500);
        if (k == 3 || k == 6) {
            c.varlen = 1;
            c.batch = 3;
        }
        if (k == 5)
            c.bm = BM_GPU, c.q_block = 128, c.kv_block = 128;
        c.determ = k == 7;
        add_case(c);
    }
    /* L: D 64 with 384-row query blocks (FA4JIT_SM90_FWD64_CONSUMERS=3 forwards run 192-row tiles
     * under them, 128-row ones under the suite's 128 and 256), dense and varlen 192-row tiles;
     * generator of its own */
    rng r6 = {6464};
    const int lmods[4] = {M_CAUSAL, M_WINDOW, M_PREFIX_LM, M_NONE};
    for (int k = 0; k < (quick ? 4 : 8); k++) {
        tcase c = random_case(&r6, lmods[k % 4], dtypes[k % 2], 64, 64);
        c.sq = rng_int(&r6, 150, 900);
        c.skv = rng_int(&r6, 150, 900);
        if (k % 4 == 3) {
            c.bm = BM_RANDOM;
        } else if (k % 4 != 2) { /* prefix_lm: dense (its mask depends on the batch entry) */
            c.bm = BM_GPU;
            c.bm_heads1 = k & 1;
        }
        if (c.bm) {
            c.q_block = 384;
            c.kv_block = k & 4 ? 64 : 128;
        }
        if (k == 5 || k == 7) {
            c.varlen = 1;
            c.batch = 3;
            c.bm = 0;
        }
        add_case(c);
    }
    /* M: deterministic dense backwards on rotated walks (sm90, FA4JIT_SM90_BWD_DET_ROTATE=1: key
     * tile n starts at query tile n mod nq, turns in the order of a lock-step run; the rng draws
     * as at 3ca366a, where rotation was the default): more query than key tiles and fewer (ties
     * of starts), GQA, varlen, a score_mod and a mask_mod without block mask, sizes not multiples
     * of the tiles; key tiles too many for one wave (134: the ascending walk, and with
     * FA4JIT_SM90_BWD_DET_ROTATE=2 groups of 132 and 2; GQA with key tiles slowest: groups of 66
     * and 5); generator of its own */
    rng r7 = {7070};
    static const int mmods[8] = {M_NONE, M_NONE, M_NONE, M_ALIBI, M_CAUSAL, M_NONE, M_NONE, M_NONE};
    for (int k = 0; k < (quick ? 5 : 8); k++) {
        tcase c = random_case(&r7, mmods[k], dtypes[k % 2], k % 2 ? 64 : 128, k % 2 ? 64 : 128);
        c.determ = 1;
        c.sq = rng_int(&r7, 700, 1300);
        c.skv = rng_int(&r7, 300, 900);
        if (k == 1) { /* more key tiles than query tiles */
            c.sq = rng_int(&r7, 100, 400);
            c.skv = rng_int(&r7, 1000, 1700);
            c.hq = 4;
            c.hkv = 2;
        }
        if (k == 2) {
            c.varlen = 1;
            c.batch = 4;
            c.skv = rng_int(&r7, 700, 1300);
        }
        if (k == 3)
            c.skv = c.sq;
        c.det_rot_env = 2; /* FA4JIT_SM90_BWD_DET_ROTATE=1 (the default is off) */
        if (k >= 5) { /* long keys, one head: 134 key tiles */
            c.batch = 1;
            c.hq = c.hkv = 1;
            c.sq = rng_int(&r7, 100, 300);
            c.skv = 133 * 128 + rng_int(&r7, 1, 127);
            c.det_rot_env = k == 6 ? 3 : 2;
        }
        if (k == 7) { /* GQA, 71 key tiles, key tiles slowest: groups of 66 */
            c.hq = 4;
            c.hkv = 2;
            c.skv = 70 * 128 + rng_int(&r7, 1, 127);
            c.det_rot_env = 3;
        }
        add_case(c);
    }
    /* N: the sm90 backward's 80-query-step main (padded D 128, non-deterministic) with block masks:
     * 80 divides no q block, so it steps over runs of consecutive q blocks, partial and full merged,
     * the last step of a run cut at its end (bwd_steps80.cuh); q blocks of 128, 256 and 384 rows
     * (the sm90 launcher's multiples of 128), kv blocks of 1 and 2 key tiles, GPU masks of causal,
     * window, document and prefix-LM, random lists, GQA, D 96, sizes not multiples of 80 or 128;
     * cases 12 and 13 with the opt-in descending order (FA4JIT_SM90_BWD80_DESC=1, session 18);
     * generator of its own */
    rng r8 = {8080};
    const int nmods[6] = {M_CAUSAL, M_WINDOW, M_DOCUMENT, M_PREFIX_LM, M_NONE, M_CAUSAL};
    static const int mqb[3] = {128, 256, 384};
    for (int k = 0; k < (quick ? 6 : 14); k++) {
        const int d = k % 5 == 4 ? 96 : 128;
        tcase c = random_case(&r8, nmods[k % 6], dtypes[(k / 6) % 2], d, d);
        c.bm = k % 6 >= 4 ? BM_RANDOM : BM_GPU;
        c.q_block = mqb[k % 3];
        c.kv_block = k & 1 ? 256 : 128;
        c.bm_heads1 = (k >> 1) & 1;
        c.sq = rng_int(&r8, 100, 1000);
        c.skv = rng_int(&r8, 100, 1000);
        c.determ = 0;
        c.varlen = 0;
        if (k % 4 == 3) {
            c.hq = 4;
            c.hkv = 2;
        }
        c.desc80_env = k >= 12; /* 12, 13: the steps from the last down (FA4JIT_SM90_BWD80_DESC=1) */
        add_case(c);
    }
    /* O: T5's bucketed relative bias (the sm90 forward's relative-form table, one per consumer
     * warpgroup and key tile): every kN, offsets, sizes not multiples of the tiles, GQA, varlen,
     * a block mask; generator of its own */
    rng rt5 = {5005};
    static const int odims[6] = {128, 64, 256, 128, 64, 128};
    for (int k = 0; k < (quick ? 3 : 6); k++) {
        tcase c = random_case(&rt5, M_T5, dtypes[k % 2], odims[k], odims[k]);
        c.sq = rng_int(&rt5, 100, 700);
        c.skv = rng_int(&rt5, 100, 700);
        c.q_off = rng_int(&rt5, 0, 300);
        c.kv_off = rng_int(&rt5, 0, 300);
        if (k == 3) {
            c.hq = 4;
            c.hkv = 2;
        }
        if (k == 4) {
            c.varlen = 1;
            c.batch = 3;
        }
        if (k == 5) {
            c.bm = BM_RANDOM;
            c.q_block = 128;
            c.kv_block = 128;
        }
        add_case(c);
    }
    /* P: T5 with its table trainable (the sm90 backward's grads_rel: the mod once per offset of a
     * fragment, the two elements of an offset summed before the runs): sizes off the tiles,
     * offsets wide enough that both the exact and the logarithmic buckets and the clamp are read,
     * every padded D, GQA, varlen, a block mask, deterministic; generator of its own */
    rng rt5t = {5115};
    static const int pdims[6] = {128, 64, 256, 96, 128, 64};
    for (int k = 0; k < (quick ? 3 : 6); k++) {
        tcase c = random_case(&rt5t, M_T5_TRAIN, dtypes[k % 2], pdims[k], pdims[k]);
        c.sq = rng_int(&rt5t, 100, 700);
        c.skv = rng_int(&rt5t, 100, 700);
        c.q_off = rng_int(&rt5t, 0, 300);
        c.kv_off = rng_int(&rt5t, 0, 300);
        c.bwd = 1;
        c.varlen = k == 4;
        c.determ = k == 5;
        if (k == 1) {
            c.hq = 4;
            c.hkv = 2;
        }
        if (k == 3) {
            c.bm = BM_RANDOM;
            c.q_block = 128;
            c.kv_block = 128;
        }
        add_case(c);
    }
    /* P: deterministic block-masked GQA with one mask for every head (sm90: the 64-query main of a
     * kernel with a mask_mod walks the group's heads innermost, FA4_DET_HEADS_INNER, path_sm90.c):
     * GQA 32:4, 8:2, 6:3 and MQA 4:1, causal, document and window masks from the GPU and random
     * lists with causal and alibi + causal (a per-head score_mod, its affine form asked at every
     * step there), q blocks 128 / 256, kv blocks of 1 and 2 key tiles, D 64 / 96 / 128, sizes
     * not multiples of the tiles, more keys than queries; the last case with
     * FA4JIT_SM90_BWD_DET_BM=0 (the head-by-head order). Bitwise equal across two runs and within
     * tolerance of the float64 reference; varlen is not combined with block masks in this suite.
     * Generator of its own */
    rng rp = {9191};
    static const int pmods[9] = {M_CAUSAL,       M_CAUSAL, M_DOCUMENT, M_DOCUMENT, M_CAUSAL,
                                 M_ALIBI_CAUSAL, M_CAUSAL, M_WINDOW,   M_CAUSAL};
    static const int pgqa[9][2] = {{32, 4}, {8, 2}, {6, 3}, {8, 2}, {6, 3}, {4, 1}, {32, 4}, {8, 2}, {32, 4}};
    static const int pdim[9] = {128, 64, 128, 64, 128, 128, 96, 128, 128};
    for (int k = 0; k < (quick ? 4 : 9); k++) {
        tcase c = random_case(&rp, pmods[k], dtypes[k % 2], pdim[k], pdim[k]);
        c.determ = 1;
        c.hq = pgqa[k][0];
        c.hkv = pgqa[k][1];
        c.batch = c.hq >= 32 ? 1 : rng_int(&rp, 1, 2);
        c.bm = k == 4 || k == 5 ? BM_RANDOM : BM_GPU;
        c.bm_heads1 = 1;
        c.q_block = k == 1 || k == 7 ? 256 : 128;
        c.kv_block = k == 2 || k == 4 ? 256 : 128;
        c.sq = rng_int(&rp, 300, 900);
        c.skv = k == 6 ? c.sq + rng_int(&rp, 100, 300) : rng_int(&rp, 300, 900);
        if (c.sq % 64 == 0)
            c.sq += 7;
        if (c.skv % 128 == 0)
            c.skv += 5;
        c.det_bm_env = k == 8 ? 1 : 0;
        c.det_heads_inner = 1;
        add_case(c);
    }
    /* Q: deterministic backward with trainable tables: their gradients too must be bitwise equal
     * across two runs (fixed-point sums, launch.c aux_fx_*: bwd_main90fx / bwd_main_fx) and
     * within tolerance of the float64 reference. T5 (32 buckets a head: every CTA of a head adds
     * into the same few entries), the relative bias and the wide table (indices past the sm90
     * window, so global fixed-point adds too); D 64 / 96 / 128 / 256, GQA, varlen, a block mask,
     * sizes off the tiles and long enough for several key tiles per head. Generator of its own */
    rng rq = {4242};
    static const int qmods[8] = {M_T5_TRAIN, M_T5_TRAIN, M_T5_TRAIN, M_RELBIAS,
                                 M_WIDEBIAS, M_RELBIAS,  M_T5_TRAIN, M_WIDEBIAS};
    static const int qdim[8] = {128, 64, 256, 128, 128, 96, 128, 64};
    for (int k = 0; k < (quick ? 3 : 8); k++) {
        tcase c = random_case(&rq, qmods[k], dtypes[k % 2], qdim[k], qdim[k]);
        c.determ = 1;
        c.bwd = 1;
        c.sq = rng_int(&rq, 500, 1400);
        c.skv = rng_int(&rq, 500, 1400);
        if (c.sq % 64 == 0)
            c.sq += 3;
        if (c.skv % 128 == 0)
            c.skv += 5;
        if (k == 1 || k == 6) {
            c.hq = 4;
            c.hkv = 2;
        }
        if (k == 3) {
            c.varlen = 1;
            c.batch = 3;
        }
        if (k == 5 || k == 6) {
            c.bm = BM_RANDOM;
            c.q_block = 128;
            c.kv_block = 128;
        }
        add_case(c);
    }
    /* R: deterministic block masks on the sm90 80-query main (session 18, path_sm90.c
     * bwd80_table_bytes: padded D 128, no score_mod, q blocks of 128 / 256 / 384 rows, fixed-length
     * queries, no GQA group): steps cut at every 80-row tile, one turn a step from the turn byte
     * fa4_sm90_bwd_turns80 writes. GPU causal, window, document and prefix-LM masks and random
     * lists, kv blocks of 1 and 2 key tiles (a last one the keys end inside), masks per head and
     * shared, batch entries, D 96, offsets, more keys than queries, sizes not multiples of 80 or 128
     * and long enough for many key tiles a head. Bitwise equal across two runs and within tolerance
     * of the float64 reference. Case 10 asks for the 64 main (FA4JIT_SM90_BWD_DET80_BM=0); GQA
     * case 9 (a mask per head) takes it by the rule; 11 (one mask for every head) takes the 80
     * main's heads-inner walk (session 19), 12 and 13 the escape hatch FA4JIT_SM90_BWD80_HEADS_INNER=0
     * (12 deterministic: the 64 main, heads inner; 13 the default mode head by head), 14 the default
     * mode's heads-inner walk over descending steps (13, 14: not split by query head, the default
     * mode's GQA backward since session 19); 15 (deterministic) and 16 (default mode) with kernels
     * compiled without FA4_COMPILE_GQA: no GQA program, so the 64 main heads inner and the 80 main
     * with the group's heads in one CTA (session 20); 17 and 18 default-mode causal GQA split with
     * FA4JIT_SM90_BWD_SPLIT_HEADS=1 (one query head a CTA; causal's default is 2) and =4 (a group
     * of 8). Generator of its own */
    rng r80 = {8018};
    const int rmods80[6] = {M_CAUSAL, M_WINDOW, M_DOCUMENT, M_PREFIX_LM, M_NONE, M_CAUSAL};
    for (int k = 0; k < (quick ? 6 : 19); k++) {
        const int d = k % 5 == 4 ? 96 : 128;
        tcase c = random_case(&r80, rmods80[k % 6], dtypes[(k / 6) % 2], d, d);
        c.determ = 1;
        c.det80 = 1;
        c.bm = k % 6 == 4 ? BM_RANDOM : BM_GPU;
        c.q_block = mqb[k % 3];
        c.kv_block = k & 1 ? 256 : 128;
        c.bm_heads1 = (k >> 1) & 1;
        c.hkv = c.hq = c.hq > 4 ? 4 : c.hq;
        c.batch = rng_int(&r80, 1, 2);
        c.sq = rng_int(&r80, 300, 1700);
        c.skv = k == 5 ? c.sq + rng_int(&r80, 100, 400) : rng_int(&r80, 300, 1700);
        if (c.sq % 80 == 0)
            c.sq += 9;
        if (c.skv % 128 == 0)
            c.skv += 5;
        c.varlen = 0;
        if (k == 7) {
            c.q_off = 37;
            c.kv_off = 5;
        }
        if (k == 10)
            c.det80_env = 1; /* FA4JIT_SM90_BWD_DET80_BM=0: the 64 main, as before session 18 */
        if (k == 9 || k >= 11) { /* GQA (9: a mask per head; 11-14: one for every head) */
            c.hq = k == 9 ? 6 : 8;
            c.hkv = k == 9 ? 3 : 2;
            c.bm_heads1 = k != 9;
        }
        /* 12, 13: FA4JIT_SM90_BWD80_HEADS_INNER=0 (12 deterministic: the 64 main; 13 the default
         * mode, head by head); 14 the default mode's heads-inner walk (no turns); 13 and 14 with
         * FA4JIT_SM90_BWD_SPLIT=0 (split by query head is the default mode's GQA walk) */
        c.hi80_env = k == 12 || k == 13;
        if (k == 12)
            c.det80 = 0;
        if (k == 13 || k == 14 || k == 16) {
            c.determ = c.det80 = 0;
            c.nosplit_env = k != 16;
        }
        if (k == 15 || k == 16) {
            c.nogqa = 1;
            c.det80 = 0;
        }
        if (k >= 17) {
            c.determ = c.det80 = 0;
            c.split_heads_env = k == 17 ? 1 : 4;
            if (k == 18)
                c.hq = 16;
        }
        add_case(c);
    }
    /* S: trainable tables with dO scaled by 2^12, so that many aux-gradient terms reach 2^6 and
     * more: the sm90 window's integer slots take terms below 2^6 only (bwd_main.cu
     * fa4_aux_grad_commit), the rest go to global memory (float atomics, or in deterministic mode
     * the fixed-point pair), so both routes add into one entry. Default and deterministic, T5,
     * the relative bias and the wide table, D 64 / 128, bf16 (fp16's dK would overflow); bitwise
     * repeatable where deterministic, and within tolerance of the float64 reference (relative
     * errors: the scale cancels). Generator of its own */
    rng rs = {2121};
    static const int smods[6] = {M_T5_TRAIN, M_RELBIAS, M_WIDEBIAS, M_T5_TRAIN, M_RELBIAS, M_WIDEBIAS};
    for (int k = 0; k < (quick ? 3 : 6); k++) {
        tcase c = random_case(&rs, smods[k], FA4_DTYPE_BF16, k % 2 ? 64 : 128, k % 2 ? 64 : 128);
        c.bwd = 1;
        c.determ = k >= 3 || k == 1;
        c.dout_scale = 4096.0;
        c.sq = rng_int(&rs, 200, 900);
        c.skv = rng_int(&rs, 200, 900);
        if (c.skv % 128 == 0)
            c.skv += 3;
        add_case(c);
    }
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
    TAG(c->mod == M_RELBIAS || c->mod == M_WIDEBIAS || c->mod == M_T5_TRAIN, "trainable-aux");
    TAG(c->aux_small, "aux-clamp");
    TAG(c->checked, "checked");
    TAG(c->validation, "validation");
    TAG(c->dlse, "dlse");
    TAG(c->det_rot_env, "det-rotate-env");
    TAG(c->det_heads_inner, "det-heads-inner");
    TAG(c->det_bm_env, "det-bm-env");
    TAG(c->det80, "det-bm80");
    TAG(c->det80_env, "det-bm80-env");
    TAG(c->hi80_env, "heads-inner80-env");
    TAG(c->desc80_env, "desc80-env");
    TAG(c->nosplit_env, "nosplit-env");
    TAG(c->nogqa, "nogqa-build");
    TAG(c->split_heads_env, "split-heads-env");
    TAG(c->dout_scale > 0, "big-dout");
    TAG(c->scale != 0.0, "scale");
#undef TAG
}

/* --filter TEXT: TEXT is one substring, or several separated by '|' (any of them matches). */
static int filter_match(const char *text, const char *filter)
{
    if (!filter)
        return 1;
    for (const char *f = filter;;) {
        const char *bar = strchr(f, '|');
        const size_t n = bar ? (size_t)(bar - f) : strlen(f);
        for (const char *t = text; n && *t; t++)
            if (!strncmp(t, f, n))
                return 1;
        if (!bar)
            return n == 0;
        f = bar + 1;
    }
}

/* Tag the cases, keep those matching the filter (at most max_cases), register their kernels. */
static int g_only = -1; /* --case N: only the Nth case that passes the filter */

static void select_cases(const char *filter, int max_cases)
{
    int n = 0, seen = 0;
    for (int i = 0; i < g_ncases; i++) {
        tcase *c = &g_cases[i];
        case_tags(c);
        if (!filter_match(c->tags, filter) || n >= max_cases)
            continue;
        if (g_only >= 0 && seen++ != g_only)
            continue;
        g_cases[n++] = *c;
        variant_index(c->mod, c->dtype, c->d, c->dv, c->checked, c->nogqa);
    }
    g_ncases = n;
}

/* A checked build must trap on an out-of-range aux read (relative bias table shorter than the
 * indices read). Returns 0 when the launch fails on the device as it should. */
static int checked_trap(void)
{
    tcase c;
    memset(&c, 0, sizeof c);
    c.mod = M_RELBIAS;
    c.dtype = FA4_DTYPE_BF16;
    c.d = c.dv = 64;
    c.batch = 1;
    c.hq = c.hkv = 1;
    c.sq = c.skv = 300;
    c.aux_small = 1;
    c.checked = 1;
    c.bwd = 0;
    c.seed = 99;
    variant_index(c.mod, c.dtype, c.d, c.dv, 1, 0);
    compile_all();
    case_out res;
    run_case(&c, &res); /* the forward traps; run_case's checks then fail on the dead context */
    return 0;
}

/* ------------------------------------------------------------------------------- main */
int main(int argc, char **argv)
{
    int quick = 0, bench_only = 0, no_bench = 0, trap = 0, max_cases = 1 << 30;
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
        else if (!strcmp(argv[i], "--case") && i + 1 < argc)
            g_only = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--checked-trap"))
            trap = 1;
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

    if (trap) /* last thing this process does: a trap leaves the CUDA context unusable */
        return checked_trap();
    if (!bench_only) {
        make_cases(quick);
        select_cases(filter, max_cases);
    }
    if (!no_bench)
        for (int i = 0; i < num_bench_shapes; i++)
            if (!filter || !bench_only || filter_match(bench_shapes[i].label, filter))
                variant_index(bench_shapes[i].mod, FA4_DTYPE_BF16, bench_shapes[i].d, bench_shapes[i].d, 0, 0);
    compile_all();

    int npass = 0, nrun = 0;
    if (!bench_only) {
        printf("\n%-4s %-58s %-22s %-22s %-22s %-22s %-22s %-10s %s\n", "case", "features", "O rel/max",
               "LSE max", "dQ rel", "dK rel", "dV rel", "dAux rel", "result");
        for (int i = 0; i < g_ncases; i++) {
            tcase *c = &g_cases[i];
            case_out res;
            const double t0 = now_ms();
            if (g_verbose)
                printf("running %d: %s B%d H%d/%d S%d/%d\n", i, c->tags, c->batch, c->hq, c->hkv, c->sq, c->skv);
            if (c->det_rot_env > 0) {
                char v[16];
                snprintf(v, sizeof v, "%d", c->det_rot_env - 1);
                setenv("FA4JIT_SM90_BWD_DET_ROTATE", v, 1);
            }
            if (c->det_bm_env > 0) {
                char v[16];
                snprintf(v, sizeof v, "%d", c->det_bm_env - 1);
                setenv("FA4JIT_SM90_BWD_DET_BM", v, 1);
            }
            if (c->det80_env > 0) {
                char v[16];
                snprintf(v, sizeof v, "%d", c->det80_env - 1);
                setenv("FA4JIT_SM90_BWD_DET80_BM", v, 1);
            }
            if (c->hi80_env)
                setenv("FA4JIT_SM90_BWD80_HEADS_INNER", "0", 1);
            if (c->desc80_env)
                setenv("FA4JIT_SM90_BWD80_DESC", "1", 1);
            if (c->nosplit_env)
                setenv("FA4JIT_SM90_BWD_SPLIT", "0", 1);
            if (c->split_heads_env > 0) {
                char v[16];
                snprintf(v, sizeof v, "%d", c->split_heads_env);
                setenv("FA4JIT_SM90_BWD_SPLIT_HEADS", v, 1);
            }
            run_case(c, &res);
            if (c->split_heads_env > 0)
                unsetenv("FA4JIT_SM90_BWD_SPLIT_HEADS");
            if (c->det_rot_env > 0)
                unsetenv("FA4JIT_SM90_BWD_DET_ROTATE");
            if (c->det_bm_env > 0)
                unsetenv("FA4JIT_SM90_BWD_DET_BM");
            if (c->det80_env > 0)
                unsetenv("FA4JIT_SM90_BWD_DET80_BM");
            if (c->hi80_env)
                unsetenv("FA4JIT_SM90_BWD80_HEADS_INNER");
            if (c->desc80_env)
                unsetenv("FA4JIT_SM90_BWD80_DESC");
            if (c->nosplit_env)
                unsetenv("FA4JIT_SM90_BWD_SPLIT");
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
            printf("%-4d %-58s %-22s %-22s %-22s %-22s %-22s %-10s %s%s%s%s%s %.0fms\n", i, feat, cols[0],
                   cols[1], cols[2], cols[3], cols[4], cols[5], res.pass ? "PASS" : "FAIL",
                   res.determ_ok == 1 ? " bitwise-equal" : (res.determ_ok == 0 ? " NOT-BITWISE" : ""),
                   res.bm_ok == 1 ? " bm-lists-ok" : (res.bm_ok == 0 ? " BM-LISTS-DIFFER" : ""),
                   res.sched_ok == 1 ? " sched-equal" : (res.sched_ok == 0 ? " SCHEDULES-DIFFER" : ""),
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
    if (!no_bench)
        for (int i = 0; i < num_bench_shapes; i++)
            if (!filter || !bench_only || filter_match(bench_shapes[i].label, filter))
                bench(&bench_shapes[i]);
    for (int i = 0; i < g_nkv; i++) {
        fa4_kernel_destroy(g_kv[i].k);
        fa4__mod_free(g_kv[i].m);
    }
    fa4_ctx_destroy(g_ctx);
    return npass == nrun ? 0 : 1;
}

