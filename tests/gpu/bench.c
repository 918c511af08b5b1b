/*
 * bench.c - times the benchmark shapes of DESIGN.md on the sm80 path (bf16): forward, backward and
 * forward + backward TFLOP/s, median of 11 runs after one warm-up, host clock around synchronised
 * launches. FLOPs: fwd = 4 B H S^2 D times the fraction of (q, kv) pairs the mask allows (causal
 * about 1/2, as DESIGN.md counts it), bwd = 2.5 x fwd, fwd + bwd = 3.5 x fwd.
 * FA4_BENCH_DETERMINISTIC=1 in the environment times the deterministic backward; FA4_BENCH_S=N
 * runs every shape at sequence length N instead (the launch gaps of small problems, e.g. 1024).
 * The forward runs the dynamic tile schedule where the path has one (a workspace, sm90);
 * FA4_BENCH_FWD_STATIC=1 times the static schedule instead, and FA4_BENCH_FWD_BOTH=1 both, their
 * launches alternating (one line each, "fwd static" / "fwd dynamic", with the host time of the
 * launch call itself: the dynamic schedule's also enqueues the counter's memset or ranking kernel).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* Cheap uniform values in [-sqrt(3), sqrt(3)] (unit variance) straight into the device layout. */
static void fill(dtensor *x, uint64_t seed)
{
    uint16_t *buf = malloc(x->bytes);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < x->bytes / 2; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        buf[i] = f2bf((float)(((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0) * 1.7320508));
    }
    CK(g_cu->memcpyHtoD(x->ptr, buf, x->bytes));
    free(buf);
}

/* Fraction of allowed pairs for the masks used here (window: causal and q - kv < window; document
 * and prefix-LM from their aux values on the host). */
static double density(int mod, int64_t s, int window, const aux_set *aux, int batch)
{
    if (mod == M_DOC_CAUSAL) {
        const int32_t *doc = aux->host[0].data;
        double n = 0;
        for (int64_t i = 0, run = 0; i < s; i++) {
            run = i > 0 && doc[i] == doc[i - 1] ? run + 1 : 1;
            n += (double)run;
        }
        return n / ((double)s * s);
    }
    if (mod == M_PREFIX_LM) {
        const int32_t *pre = aux->host[0].data;
        double n = 0;
        for (int b = 0; b < batch; b++)
            for (int64_t i = 0; i < s; i++)
                n += (double)(i + 1 > pre[b] ? (i + 1 < s ? i + 1 : s) : (pre[b] < s ? pre[b] : s));
        return n / ((double)batch * s * s);
    }
    if (mod == M_CAUSAL || mod == M_ALIBI_CAUSAL)
        return (double)(s + 1) / (2.0 * s);
    if (mod == M_WINDOW) {
        double n = 0;
        for (int64_t i = 0; i < s; i++)
            n += (double)(i + 1 < window ? i + 1 : window);
        return n / ((double)s * s);
    }
    return 1.0;
}

void bench(const bench_shape *b)
{
    tcase c;
    memset(&c, 0, sizeof c);
    c.mod = b->mod;
    c.dtype = FA4_DTYPE_BF16;
    c.d = c.dv = b->d;
    c.batch = b->batch;
    c.hq = b->hq;
    c.hkv = b->hkv;
    c.sq = c.skv = b->s;
    const char *es = getenv("FA4_BENCH_S");
    if (es && atoi(es) > 0)
        c.sq = c.skv = atoi(es);
    c.layout = L_BHSD;
    kvariant *kv = &g_kv[variant_index(c.mod, c.dtype, c.d, c.dv, 0, 0)];
    if (kv->st != FA4_OK || !kv->k) {
        printf("BENCH %-26s kernel not compiled\n", b->label);
        return;
    }
    rng r = {7};
    const int64_t t = (int64_t)c.batch * c.sq;
    dtensor Q, K, V, O, dO, dQ, dK, dV;
    make_tensor(&Q, &c, c.dtype, c.hq, t, c.sq, c.d);
    make_tensor(&K, &c, c.dtype, c.hkv, t, c.sq, c.d);
    make_tensor(&V, &c, c.dtype, c.hkv, t, c.sq, c.d);
    make_tensor(&O, &c, c.dtype, c.hq, t, c.sq, c.d);
    make_tensor(&dO, &c, c.dtype, c.hq, t, c.sq, c.d);
    make_tensor(&dQ, &c, c.dtype, c.hq, t, c.sq, c.d);
    make_tensor(&dK, &c, c.dtype, c.hkv, t, c.sq, c.d);
    make_tensor(&dV, &c, c.dtype, c.hkv, t, c.sq, c.d);
    fill(&Q, 1);
    fill(&K, 2);
    fill(&V, 3);
    fill(&dO, 4);
    CUdeviceptr lse, ws = 0, fws = 0;
    CK(g_cu->memAlloc(&lse, (size_t)c.hq * t * 4));
    bmask bm;
    memset(&bm, 0, sizeof bm);
    aux_set aux;
    make_aux(&aux, &c, &r, c.sq + 8);
    if (c.mod == M_WINDOW)
        aux.dev[0].i = aux.host[0].i = b->window;
    if (b->block_mask) {
        /* one mask for every batch entry and head (broadcast), made on the GPU and checked */
        c.q_block = c.kv_block = 128;
        if (b->block_mask == 3)
            c.q_block = 384; /* a multiple of 192: three-consumer forwards run 192-row tiles */
        c.bm_heads1 = 1;
        c.batch = b->block_mask == 2 ? b->batch : 1;
        c.bm_unchecked = b->block_mask == 2;
        fa4_status st = bm_gpu(&bm, &c, kv->k, kv->m, &aux);
        c.batch = b->batch;
        if (st != FA4_OK || !bm.ok) {
            printf("BENCH %-26s block mask failed (%s)\n", b->label, fa4_status_name(st));
            goto out;
        }
    }
    fa4_fwd_args fa;
    fa4_fwd_args_init(&fa);
    fa.q = Q.t;
    fa.k = K.t;
    fa.v = V.t;
    fa.o = O.t;
    fa.lse = lse_tensor(lse, c.batch, c.hq, c.sq);
    fa.aux = aux.dev;
    fa.num_aux = aux.n;
    fa.block_mask = b->block_mask ? &bm.bm : NULL;
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
    /* FA4_BENCH_DETERMINISTIC=1 times the deterministic backward instead */
    const char *det = getenv("FA4_BENCH_DETERMINISTIC");
    ba.deterministic = det && det[0] == '1';
    size_t ws_bytes = 0;
    if (fa4_bwd_workspace_size(kv->k, &ba, &ws_bytes) != FA4_OK) {
        printf("BENCH %-26s workspace: %s\n", b->label, fa4_ctx_errmsg(g_ctx));
        goto out;
    }
    CK(g_cu->memAlloc(&ws, ws_bytes));
    ba.workspace = (void *)(uintptr_t)ws;
    ba.workspace_size = ws_bytes;
    /* the forward's dynamic tile schedule (a workspace), unless FA4_BENCH_FWD_STATIC=1 */
    const char *fst = getenv("FA4_BENCH_FWD_STATIC");
    size_t fws_bytes = 0;
    if (fa4_fwd_workspace_size(kv->k, &fa, &fws_bytes) != FA4_OK) {
        printf("BENCH %-26s fwd workspace: %s\n", b->label, fa4_ctx_errmsg(g_ctx));
        goto out;
    }
    if (fws_bytes > 0 && !(fst && fst[0] == '1')) {
        CK(g_cu->memAlloc(&fws, fws_bytes));
        fa.workspace = (void *)(uintptr_t)fws;
        fa.workspace_size = fws_bytes;
    }
    const char *both = getenv("FA4_BENCH_FWD_BOTH");
    if (fws && both && both[0] == '1') {
        enum { N = 11 };
        double ms[2][N], host_us[2][N];
        fa4_fwd_args fs = fa;
        fs.workspace = NULL;
        fs.workspace_size = 0;
        for (int i = 0; i < 2 * (N + 1); i++) {
            const int dyn = i & 1;
            CK(g_cu->ctxSynchronize());
            const double t0 = now_ms();
            fa4_status st = fa4_launch_fwd(kv->k, dyn ? &fa : &fs);
            const double t1 = now_ms();
            CK(g_cu->ctxSynchronize());
            if (st != FA4_OK) {
                printf("BENCH %-26s launch failed: %s\n", b->label, fa4_ctx_errmsg(g_ctx));
                goto out;
            }
            if (i >= 2) {
                ms[dyn][i / 2 - 1] = now_ms() - t0;
                host_us[dyn][i / 2 - 1] = (t1 - t0) * 1e3;
            }
        }
        const double flops = 4.0 * c.batch * c.hq * (double)c.sq * c.skv * c.d * density(c.mod, c.sq, b->window, &aux, c.batch);
        for (int dyn = 0; dyn < 2; dyn++) {
            for (int i = 0; i < N; i++)
                for (int j = i + 1; j < N; j++) {
                    if (ms[dyn][j] < ms[dyn][i]) {
                        const double x = ms[dyn][i];
                        ms[dyn][i] = ms[dyn][j];
                        ms[dyn][j] = x;
                    }
                    if (host_us[dyn][j] < host_us[dyn][i]) {
                        const double x = host_us[dyn][i];
                        host_us[dyn][i] = host_us[dyn][j];
                        host_us[dyn][j] = x;
                    }
                }
            printf("BENCH %-26s B=%d H=%d/%d S=%d D=%d: fwd %-7s %7.3f ms %6.1f TFLOP/s (launch call %.1f us)\n",
                   b->label, c.batch, c.hq, c.hkv, c.sq, c.d, dyn ? "dynamic" : "static", ms[dyn][N / 2],
                   flops / (ms[dyn][N / 2] * 1e-3) / 1e12, host_us[dyn][N / 2]);
        }
        goto out;
    }
    double med_ms[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        double ms[11];
        const int n = 11;
        for (int i = 0; i < n + 1; i++) {
            CK(g_cu->ctxSynchronize());
            const double t0 = now_ms();
            fa4_status st = pass == 0 ? fa4_launch_fwd(kv->k, &fa) : fa4_launch_bwd(kv->k, &ba);
            CK(g_cu->ctxSynchronize());
            if (st != FA4_OK) {
                printf("BENCH %-26s launch failed: %s\n", b->label, fa4_ctx_errmsg(g_ctx));
                goto out;
            }
            if (i > 0)
                ms[i - 1] = now_ms() - t0;
        }
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (ms[j] < ms[i]) {
                    const double x = ms[i];
                    ms[i] = ms[j];
                    ms[j] = x;
                }
        med_ms[pass] = ms[n / 2];
    }
    const double fwd_flops = 4.0 * c.batch * c.hq * (double)c.sq * c.skv * c.d * density(c.mod, c.sq, b->window, &aux, c.batch);
    printf("BENCH %-26s B=%d H=%d/%d S=%d D=%d: fwd %7.3f ms %6.1f TFLOP/s | bwd %7.3f ms %6.1f TFLOP/s | "
           "fwd+bwd %6.1f TFLOP/s%s\n",
           b->label, c.batch, c.hq, c.hkv, c.sq, c.d, med_ms[0], fwd_flops / (med_ms[0] * 1e-3) / 1e12,
           med_ms[1], 2.5 * fwd_flops / (med_ms[1] * 1e-3) / 1e12,
           3.5 * fwd_flops / ((med_ms[0] + med_ms[1]) * 1e-3) / 1e12, fws ? " (fwd dynamic)" : "");
out:;
    dtensor *all[8] = {&Q, &K, &V, &O, &dO, &dQ, &dK, &dV};
    for (int i = 0; i < 8; i++)
        free_tensor(all[i]);
    g_cu->memFree(lse);
    if (ws)
        g_cu->memFree(ws);
    if (fws)
        g_cu->memFree(fws);
    bm_free(&bm);
    free_aux(&aux);
}

const bench_shape bench_shapes[] = {
    {"plain", M_NONE, 4, 16, 16, 4096, 128, 0, 0},
    {"plain S=8192", M_NONE, 4, 16, 16, 8192, 128, 0, 0},
    {"causal (block mask)", M_CAUSAL, 4, 16, 16, 4096, 128, 1, 0},
    {"plain D=64 (B=8)", M_NONE, 8, 8, 8, 4096, 64, 0, 0},
    /* issue 8's D 64 shape, and causal at D 64 with 128- and 384-row query blocks (a
     * FA4JIT_SM90_FWD64_CONSUMERS=3 forward runs 128-row tiles under the first, 192 under the second) */
    {"plain D=64 (B=8 H=16)", M_NONE, 8, 16, 16, 4096, 64, 0, 0},
    {"causal D=64 (bm)", M_CAUSAL, 8, 16, 16, 4096, 64, 1, 0},
    {"causal D=64 (bm q384)", M_CAUSAL, 8, 16, 16, 4096, 64, 3, 0},
    {"GQA 32:4 causal (bm)", M_CAUSAL, 2, 32, 4, 4096, 128, 1, 0},
    /* bench/run.py's GQA case (B 8: over 4 waves of backward CTAs, so not key tiles slowest) */
    {"GQA 32:4 causal B=8 (bm)", M_CAUSAL, 8, 32, 4, 4096, 128, 1, 0},
    {"ALiBi (score_mod)", M_ALIBI, 4, 16, 16, 4096, 128, 0, 0},
    {"soft-cap tanh (score_mod)", M_SOFTCAP, 4, 16, 16, 4096, 128, 0, 0},
    /* the suite's trainable relative bias, bias[clamp(kv_idx - q_idx + 256, 0, 511)] */
    {"rel. bias (score_mod)", M_RELBIAS, 4, 16, 16, 4096, 128, 0, 0},
    /* mods/t5_bias.mod (32 buckets, max distance 128; not trainable here) */
    {"T5 bias (score_mod)", M_T5, 4, 16, 16, 4096, 128, 0, 0},
    {"T5 bias D=256", M_T5, 4, 16, 16, 4096, 256, 0, 0},
    /* the same with its table trainable (bench/run.py's T5 case) */
    {"T5 bias trainable", M_T5_TRAIN, 4, 16, 16, 4096, 128, 0, 0},
    {"sliding window 1024 (bm)", M_WINDOW, 4, 16, 16, 4096, 128, 1, 1024},
    /* bench/run.py's document and prefix-LM cases (issue 8) */
    {"document (bm)", M_DOC_CAUSAL, 8, 16, 16, 4096, 128, 1, 0},
    /* GQA with the document mask (one for every head): the deterministic heads-inner walk */
    {"GQA 32:4 document (bm)", M_DOC_CAUSAL, 2, 32, 4, 4096, 128, 1, 0},
    {"prefix-LM (bm per batch)", M_PREFIX_LM, 8, 16, 16, 4096, 128, 2, 0},
    /* GQA with a window and per-batch prefix masks (the 80 main's heads-inner walk, session 19) */
    {"GQA 32:4 window 1024 (bm)", M_WINDOW, 2, 32, 4, 4096, 128, 1, 1024},
    {"GQA 32:4 prefix-LM (bm per batch)", M_PREFIX_LM, 2, 32, 4, 4096, 128, 2, 0},
    /* GQA without a mask (the split's heads a CTA, session 20) */
    {"GQA 32:4 dense", M_NONE, 2, 32, 4, 4096, 128, 0, 0},
    /* the largest head dim (kN 64, two K/V stages) */
    {"plain D=256", M_NONE, 4, 16, 16, 4096, 256, 0, 0},
    {"causal D=256 (bm)", M_CAUSAL, 4, 16, 16, 4096, 256, 1, 0},
};
const int num_bench_shapes = (int)(sizeof bench_shapes / sizeof bench_shapes[0]);
