/*
 * bench.c - times the benchmark shape of DESIGN.md (bf16, B*H = 64, S = 4096, D = 128) on the sm80
 * path: forward, backward, and forward + backward TFLOP/s (fwd = 4 B H S^2 D, causal halved;
 * bwd = 2.5 x fwd), median of 11 runs after one warm-up, host clock around synchronised launches.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* ------------------------------------------------------------------------------ bench */
void bench(int mod, const char *label, int causal_bm)
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
